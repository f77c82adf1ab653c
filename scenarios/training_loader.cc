// Reading the model, training set-up, parallel plan and reference of a training scenario,
// and lowering them with the roofline cost model.
#include "scenarios/training_loader.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "models/cost_model.h"
#include "scenarios/json_document.h"

namespace dtsim::scenario_detail {

namespace {

std::vector<std::string_view> names_of(const auto& values, auto name_fn) {
  std::vector<std::string_view> out;
  for (auto v : values) out.push_back(name_fn(v));
  return out;
}

constexpr std::string_view kAxisNames[] = {"tp", "cp", "dp", "pp"};
constexpr std::string_view kTpCommModels[] = {"analytical", "flow"};

std::optional<models::ModelSpec> read_hf_config(const std::string& path, const std::string& pointer,
                                                Diagnostics& d) {
  std::string error;
  const std::optional<std::string> text = read_input_file(path, error);
  if (!text) {
    d.error(pointer, "cannot read the Hugging Face config " + in_quotes(path) + ": " + error);
    return std::nullopt;
  }
  std::vector<InputProblem> problems;
  const std::optional<nlohmann::json> config = parse_json_strictly(*text, problems);
  if (!config) {
    d.error(pointer, path + ": " + describe_problems(problems, "; "));
    return std::nullopt;
  }
  try {
    return models::model_spec_from_hf_config(*config, path);
  } catch (const models::HfConfigError& e) {
    d.error(pointer, e.what());
  }
  return std::nullopt;
}

// model.stages: a resnet's stages, each {blocks, width, stride, block}.
void read_stages(const json& value, const std::string& pointer, models::ModelSpec& spec,
                 Diagnostics& d) {
  const json::array_t* items = read_array(value, pointer, d, "a list of stages");
  if (!items) return;
  const auto blocks = names_of(models::kAllResnetBlocks, models::resnet_block_name);
  spec.stages.clear();
  for (size_t i = 0; i < items->size(); ++i) {
    auto o = JsonObject::open((*items)[i], child_pointer(pointer, i), d);
    if (!o) continue;
    models::CnnStage stage;
    if (auto v = o->integer("blocks", Need::kRequired, 1, INT32_MAX))
      stage.blocks = static_cast<int>(*v);
    if (auto v = o->integer("width", Need::kRequired, 1, INT64_MAX)) stage.width = *v;
    if (auto v = o->integer("stride", Need::kOptional, 1, INT32_MAX))
      stage.stride = static_cast<int>(*v);
    if (auto v = o->choice("block", Need::kRequired, blocks, "residual block")) {
      stage.block = models::kAllResnetBlocks[*v];
    }
    o->report_unknown_keys();
    spec.stages.push_back(stage);
  }
}

// model.stem: the convolution (and pool) before a resnet's stages.
void read_stem(const json& value, const std::string& pointer, models::CnnStem& stem,
               Diagnostics& d) {
  auto o = JsonObject::open(value, pointer, d);
  if (!o) return;
  if (auto v = o->integer("width", Need::kOptional, 1, INT64_MAX)) stem.width = *v;
  if (auto v = o->integer("kernel", Need::kOptional, 1, INT32_MAX))
    stem.kernel = static_cast<int>(*v);
  if (auto v = o->integer("stride", Need::kOptional, 1, INT32_MAX))
    stem.stride = static_cast<int>(*v);
  if (auto v = o->boolean("max_pool", Need::kOptional)) stem.max_pool = *v;
  o->report_unknown_keys();
}

std::optional<models::ModelSpec> read_model(const json& value, const std::string& pointer,
                                            const std::string& source, Diagnostics& d) {
  auto o = JsonObject::open(value, pointer, d);
  if (!o) return std::nullopt;
  const size_t errors_before = d.count();
  models::ModelSpec spec;
  bool based = false;
  const int bases = int{o->has("preset")} + int{o->has("hf_config")} + int{o->has("family")};
  if (bases != 1) {
    d.error(pointer, "give exactly one of \"preset\", \"hf_config\" or \"family\"");
    o->accept({"preset", "hf_config", "family"});
  } else if (o->has("preset")) {
    const auto preset = o->string("preset", Need::kRequired, "a model preset name");
    if (!preset) {
      // The type error is reported; the other bases are not missing.
    } else if (const models::ModelPreset* p = models::find_model_preset(*preset)) {
      spec = p->spec;
      based = true;
    } else {
      std::vector<std::string_view> names;
      for (const auto& p2 : models::model_presets()) names.push_back(p2.name);
      const std::string guess = closest_match(*preset, names);
      d.error(o->pointer("preset"), "unknown model preset " + in_quotes(*preset) + " (" +
                                        (guess.empty() ? "" : "did you mean " + in_quotes(guess) + "? ") +
                                        "see `dtsim list models`)");
    }
  } else if (o->has("hf_config")) {
    const auto path = o->string("hf_config", Need::kRequired, "a path to a config.json");
    if (!path) return std::nullopt;
    std::filesystem::path p(*path);
    if (p.is_relative()) p = std::filesystem::path(source).parent_path() / p;
    if (auto s = read_hf_config(p.string(), o->pointer("hf_config"), d)) {
      spec = *s;
      based = true;
    }
  } else {
    const auto families = names_of(models::kAllModelFamilies, models::model_family_name);
    if (auto f = o->choice("family", Need::kRequired, families, "model family")) {
      spec.family = models::kAllModelFamilies[*f];
      spec.name = std::string(families[*f]);
      based = true;
    }
  }
  if (auto v = o->string("name", Need::kOptional)) spec.name = *v;
  if (auto v = o->integer("layers", Need::kOptional, 1)) spec.layers = static_cast<int>(*v);
  if (auto v = o->integer("hidden", Need::kOptional, 1, INT64_MAX)) spec.hidden = *v;
  if (auto v = o->integer("heads", Need::kOptional, 1)) spec.heads = static_cast<int>(*v);
  if (auto v = o->integer("kv_heads", Need::kOptional, 1)) spec.kv_heads = static_cast<int>(*v);
  if (auto v = o->integer("ffn_hidden", Need::kOptional, 1, INT64_MAX)) spec.ffn_hidden = *v;
  if (auto v = o->integer("vocab", Need::kOptional, 1, INT64_MAX)) spec.vocab = *v;
  if (auto v = o->integer("experts", Need::kOptional, 1)) spec.experts = static_cast<int>(*v);
  if (auto v = o->integer("top_k", Need::kOptional, 1)) spec.top_k = static_cast<int>(*v);
  if (auto v = o->integer("moe_ffn_hidden", Need::kOptional, 1, INT64_MAX)) spec.moe_ffn_hidden = *v;
  if (auto v = o->integer("shared_ffn_hidden", Need::kOptional, 0, INT64_MAX))
    spec.shared_ffn_hidden = *v;
  if (auto v = o->boolean("shared_expert_gate", Need::kOptional)) spec.shared_expert_gate = *v;
  if (auto v = o->integer("first_dense_layers", Need::kOptional, 0))
    spec.first_dense_layers = static_cast<int>(*v);
  if (auto v = o->integer("moe_layer_period", Need::kOptional, 1))
    spec.moe_layer_period = static_cast<int>(*v);
  if (auto v = o->integer("seq_len", Need::kOptional, 1, INT64_MAX)) spec.seq_len = *v;
  if (auto v = o->boolean("tied_embeddings", Need::kOptional)) spec.tied_embeddings = *v;
  if (auto v = o->integer("head_dim", Need::kOptional, 1, INT64_MAX)) spec.explicit_head_dim = *v;
  if (auto v = o->boolean("qk_norm", Need::kOptional)) spec.qk_norm = *v;
  if (auto v = o->integer("sliding_window", Need::kOptional, 0, INT64_MAX))
    spec.sliding_window = *v;
  if (const json* pattern = o->get("window_pattern", Need::kOptional, "a list of \"sliding\" and \"full\"")) {
    static constexpr std::string_view kKinds[] = {"sliding", "full"};
    if (const json::array_t* items = read_array(*pattern, o->pointer("window_pattern"), d,
                                                "\"sliding\" or \"full\"")) {
      spec.window_pattern.clear();
      for (size_t i = 0; i < items->size(); ++i) {
        if (auto k = read_choice((*items)[i], child_pointer(o->pointer("window_pattern"), i), d,
                                 kKinds, "layer's attention")) {
          spec.window_pattern.push_back(*k == 0);
        }
      }
    }
  }
  if (auto v = o->boolean("attention_sinks", Need::kOptional)) spec.attention_sinks = *v;
  for (auto [key, field] : {std::pair{"q_lora_rank", &models::ModelSpec::q_lora_rank},
                            {"kv_lora_rank", &models::ModelSpec::kv_lora_rank},
                            {"qk_nope_head_dim", &models::ModelSpec::qk_nope_head_dim},
                            {"qk_rope_head_dim", &models::ModelSpec::qk_rope_head_dim},
                            {"v_head_dim", &models::ModelSpec::v_head_dim}}) {
    if (auto v = o->integer(key, Need::kOptional, key == std::string_view("q_lora_rank") ? 0 : 1,
                            INT64_MAX)) {
      spec.*field = *v;
    }
  }
  if (auto v = o->integer("image_size", Need::kOptional, 1)) spec.image_size = static_cast<int>(*v);
  if (const json* stages = o->get("stages", Need::kOptional, "a list of stages")) {
    read_stages(*stages, o->pointer("stages"), spec, d);
  }
  if (const json* stem = o->get("stem", Need::kOptional, "an object")) {
    read_stem(*stem, o->pointer("stem"), spec.stem, d);
  }
  static constexpr std::string_view kPools[] = {"average", "flatten"};
  if (auto v = o->choice("feature_pool", Need::kOptional, kPools, "feature pooling")) {
    spec.feature_pool = *v == 0 ? models::FeaturePool::kAverage : models::FeaturePool::kFlatten;
  }
  if (auto v = o->integer("classes", Need::kOptional, 1, INT64_MAX)) spec.classes = *v;
  if (auto v = o->integer("input_features", Need::kOptional, 1, INT64_MAX)) spec.input_features = *v;
  if (auto v = o->string("backbone", Need::kOptional)) spec.backbone = *v;
  if (auto v = o->integer("embedding", Need::kOptional, 1, INT64_MAX)) spec.embedding = *v;
  if (auto v = o->number("sample_rate", Need::kOptional, 0)) spec.sample_rate = *v;
  if (auto v = o->integer("knn_candidates", Need::kOptional, 1, INT64_MAX)) spec.knn_candidates = *v;
  o->report_unknown_keys();
  if (!based || d.count() != errors_before) return std::nullopt;
  // A dimension the family does not build from would be ignored: say so instead.
  const std::vector<std::string_view> used = models::model_keys_used(spec);
  for (const auto& [key, unused] : value.items()) {
    // Transformers other than moe have their own error for experts and top_k.
    if (key == "preset" || key == "hf_config" || key == "family" ||
        std::find(used.begin(), used.end(), key) != used.end()) {
      continue;
    }
    std::string keys;
    for (std::string_view k : used) keys += (keys.empty() ? "" : ", ") + std::string(k);
    d.error(o->pointer(key), "does not apply to the " +
                                 std::string(models::model_family_name(spec.family)) +
                                 " family, which is built from: " + keys);
  }
  if (d.count() != errors_before) return std::nullopt;
  // Problems name a field ("hidden: must be positive, got 0"): point at it, or say it is
  // missing when the model gave no value and its family needs one.
  const bool explicit_family = o->has("family");
  for (const std::string& problem : models::validate_model_spec(spec)) {
    const size_t colon = problem.find(": ");
    const std::string field = colon == std::string::npos ? "" : problem.substr(0, colon);
    const bool is_key = !field.empty() && field.find(' ') == std::string::npos;
    // A field below a key ("stages/2/width") points into it.
    const std::string key = field.substr(0, field.find('/'));
    if (is_key && o->has(key)) {
      d.error(o->pointer(key) + field.substr(key.size()), problem.substr(colon + 2));
    } else if (is_key && explicit_family) {
      d.error(pointer, "missing required key " + in_quotes(field) + " for family " +
                           in_quotes(models::model_family_name(spec.family)));
    } else {
      d.error(pointer, problem);
    }
  }
  if (d.count() != errors_before) return std::nullopt;
  return spec;
}

// training.batch_phases ([{global_batch, samples}]) or Megatron-LM's batch_rampup ({start,
// increment, samples}): the smaller batches a run starts with. `amounts` says how the
// run's length was given (at most one of total_tokens, dataset_samples, iterations).
void read_batch_schedule(JsonObject& o, models::TrainingSetup& t, int amounts, Diagnostics& d) {
  const bool phases = o.has("batch_phases");
  const bool rampup = o.has("batch_rampup");
  if (!phases && !rampup) return;
  const std::string key = phases ? "batch_phases" : "batch_rampup";
  if (phases && rampup) {
    d.error(o.pointer("batch_rampup"), "give one of \"batch_phases\" and \"batch_rampup\"");
    return;
  }
  if (t.iterations || amounts == 0) {
    // Megatron-LM asserts --train-samples with a ramp-up: the phases end at sample counts.
    d.error(o.pointer(key),
            "a batch-size schedule switches batches at sample counts: give the "
            "run's length as \"total_tokens\" or \"dataset_samples\"");
  }
  if (phases) {
    const json* list = o.get("batch_phases", Need::kOptional, "a list of phases");
    const json::array_t* items =
        list ? read_array(*list, o.pointer("batch_phases"), d, "phases") : nullptr;
    if (!items) return;
    if (items->empty()) {
      d.error(o.pointer("batch_phases"), "expected at least one phase");
      return;
    }
    for (size_t i = 0; i < items->size(); ++i) {
      auto p = JsonObject::open((*items)[i], child_pointer(o.pointer("batch_phases"), i), d);
      if (!p) continue;
      models::BatchPhase phase;
      if (auto v = p->integer("global_batch", Need::kRequired, 1, INT64_MAX))
        phase.global_batch = *v;
      if (auto v = p->integer("samples", Need::kRequired, 1, INT64_MAX)) phase.samples = *v;
      p->report_unknown_keys();
      t.batch_phases.push_back(phase);
    }
    return;
  }
  auto r = JsonObject::open(*o.get("batch_rampup", Need::kOptional, "an object"),
                            o.pointer("batch_rampup"), d);
  if (!r) return;
  const auto start = r->integer("start", Need::kRequired, 1, INT64_MAX);
  const auto increment = r->integer("increment", Need::kRequired, 1, INT64_MAX);
  const auto samples = r->integer("samples", Need::kRequired, 1, INT64_MAX);
  r->report_unknown_keys();
  if (!start || !increment || !samples) return;
  if (t.global_batch <= 0) {
    d.error(r->pointer(), "ramps up to global_batch: give \"global_batch\"");
    return;
  }
  std::string problem;
  t.batch_phases = models::megatron_rampup(*start, *increment, *samples, t.global_batch, problem);
  if (!problem.empty()) d.error(r->pointer(), problem);
}

// Megatron-LM's --recompute-modules: names of models::RecomputeModule, under selective
// recomputation only.
void read_recompute_modules(const json& value, const std::string& pointer, models::TrainingSetup& t,
                            Diagnostics& d) {
  const auto names = names_of(models::kAllRecomputeModules, models::recompute_module_name);
  const json::array_t* items = read_array(value, pointer, d, "recompute module names");
  if (!items) return;
  models::RecomputeModules modules = 0;
  for (size_t i = 0; i < items->size(); ++i) {
    if (auto m = read_choice((*items)[i], child_pointer(pointer, i), d, names, "recompute module")) {
      modules |= models::module_bit(models::kAllRecomputeModules[*m]);
    }
  }
  if (t.recompute != models::Recompute::kSelective) {
    d.error(pointer, "applies to \"recompute\": \"selective\", and recompute is \"" +
                         std::string(models::recompute_name(t.recompute)) + "\"");
    return;
  }
  t.recompute_modules = modules;
}

// training.run: the parts of a whole run besides its steps (models/training_run.h).
void read_run(const json& value, const std::string& pointer, models::RunSetup& run,
              Diagnostics& d) {
  auto o = JsonObject::open(value, pointer, d);
  if (!o) return;
  if (auto v = o->duration("startup", Need::kOptional)) run.startup = *v;
  if (auto v = o->integer("checkpoint_every", Need::kOptional, 1, INT64_MAX)) {
    run.checkpoint_every = *v;
  }
  if (auto v = o->bandwidth("checkpoint_write_bandwidth", Need::kOptional)) {
    run.checkpoint_write_bandwidth = *v;
  }
  if (auto v = o->integer("eval_every", Need::kOptional, 1, INT64_MAX)) run.eval_every = *v;
  if (auto v = o->integer("eval_samples", Need::kOptional, 1, INT64_MAX)) run.eval_samples = *v;
  if (auto v = o->number("input_samples_per_s_per_core", Need::kOptional, 0)) {
    run.input_samples_per_s_per_core = *v;
  }
  if (auto v = o->integer("input_cores_per_node", Need::kOptional, 1)) {
    run.input_cores_per_node = static_cast<int>(*v);
  }
  if (auto v = o->number("input_samples_per_s_per_node", Need::kOptional, 0)) {
    run.input_samples_per_s_per_node = *v;
  }
  // Keys that only make sense together.
  const auto needs = [&](bool present, const char* key, bool other, const std::string& what) {
    if (present && !other) d.error(o->pointer(key), "needs " + what);
  };
  needs(run.checkpoint_every > 0, "checkpoint_every",
        run.checkpoint_write_bandwidth.bytes_per_second() > 0,
        "\"checkpoint_write_bandwidth\" (each node's storage write rate)");
  needs(run.checkpoint_write_bandwidth.bytes_per_second() > 0, "checkpoint_write_bandwidth",
        run.checkpoint_every > 0, "\"checkpoint_every\" (iterations between checkpoints)");
  needs(run.eval_every > 0, "eval_every", run.eval_samples > 0,
        "\"eval_samples\" (samples an evaluation pass runs)");
  needs(run.eval_samples > 0, "eval_samples", run.eval_every > 0,
        "\"eval_every\" (iterations between evaluation passes)");
  needs(run.input_samples_per_s_per_core > 0, "input_samples_per_s_per_core",
        run.input_cores_per_node > 0, "\"input_cores_per_node\"");
  needs(run.input_cores_per_node > 0, "input_cores_per_node",
        run.input_samples_per_s_per_core > 0, "\"input_samples_per_s_per_core\"");
  if (run.input_samples_per_s_per_node > 0 && run.input_samples_per_s_per_core > 0) {
    d.error(o->pointer("input_samples_per_s_per_node"),
            "give a node's rate or a core's rate with the cores, not both");
  }
  o->report_unknown_keys();
}

std::optional<models::TrainingSetup> read_setup(const json& value, const std::string& pointer,
                                                Diagnostics& d) {
  auto o = JsonObject::open(value, pointer, d);
  if (!o) return std::nullopt;
  const size_t errors_before = d.count();
  models::TrainingSetup t;
  if (auto v = o->integer("global_batch", Need::kOptional, 1, INT64_MAX)) t.global_batch = *v;
  if (auto v = o->integer("micro_batch", Need::kOptional, 1, INT64_MAX)) t.micro_batch = *v;
  if (auto v = o->integer("seq_len", Need::kOptional, 1, models::kMaxSequence)) t.seq_len = *v;
  const auto precisions = names_of(models::kAllPrecisions, models::precision_name);
  if (auto v = o->choice("precision", Need::kOptional, precisions, "precision")) t.precision = models::kAllPrecisions[*v];
  const auto optimizers = names_of(models::kAllOptimizers, models::optimizer_name);
  if (auto v = o->choice("optimizer", Need::kOptional, optimizers, "optimizer")) t.optimizer = models::kAllOptimizers[*v];
  const auto recomputes = names_of(models::kAllRecomputes, models::recompute_name);
  if (auto v = o->choice("recompute", Need::kOptional, recomputes, "recompute mode")) t.recompute = models::kAllRecomputes[*v];
  if (auto v = o->boolean("flash_attention", Need::kOptional)) t.flash_attention = *v;
  if (const json* modules = o->get("recompute_modules", Need::kOptional, "a list of module names")) {
    read_recompute_modules(*modules, o->pointer("recompute_modules"), t, d);
  }
  const auto methods = names_of(models::kAllRecomputeMethods, models::recompute_method_name);
  const bool full = t.recompute == models::Recompute::kFull;
  const std::string needs_full = "applies to \"recompute\": \"full\", and recompute is \"" +
                                 std::string(models::recompute_name(t.recompute)) + "\"";
  if (auto v = o->choice("recompute_method", Need::kOptional, methods, "recompute method")) {
    t.recompute_method = models::kAllRecomputeMethods[*v];
    if (!full) d.error(o->pointer("recompute_method"), needs_full);
  }
  if (auto v = o->integer("recompute_num_layers", Need::kOptional, 1)) {
    t.recompute_num_layers = static_cast<int>(*v);
    if (!full) d.error(o->pointer("recompute_num_layers"), needs_full);
  }
  if (auto v = o->integer("offload_layers", Need::kOptional, 0, INT32_MAX)) {
    t.offload_layers = static_cast<int>(*v);
  }
  if (auto v = o->number("expert_load_imbalance", Need::kOptional, 1)) t.expert_load_imbalance = *v;
  if (auto v = o->number("expert_capacity_factor", Need::kOptional, 0)) {
    t.expert_capacity_factor = *v;
    if (*v > 0 && *v < 1) {
      d.error(o->pointer("expert_capacity_factor"),
              "expected 0 (drop-less) or at least 1 (an expert's share of the routed tokens), got " +
                  std::to_string(*v));
    }
  }
  int amounts = 0;
  if (auto v = o->number("total_tokens", Need::kOptional, 1)) {
    t.total_tokens = *v;
    ++amounts;
  }
  if (auto v = o->integer("dataset_samples", Need::kOptional, 1, INT64_MAX)) {
    t.dataset_samples = *v;
    ++amounts;
  }
  if (auto v = o->number("epochs", Need::kOptional, 0)) {
    t.epochs = *v;
    if (!t.dataset_samples) d.error(o->pointer("epochs"), "needs \"dataset_samples\"");
  }
  if (auto v = o->integer("iterations", Need::kOptional, 1, INT64_MAX)) {
    t.iterations = *v;
    ++amounts;
  }
  if (amounts > 1) {
    d.error(pointer, "give at most one of \"total_tokens\", \"dataset_samples\" or \"iterations\"");
  }
  read_batch_schedule(*o, t, amounts, d);
  if (const json* run = o->get("run", Need::kOptional, "an object")) {
    read_run(*run, o->pointer("run"), t.run, d);
    if (amounts == 0) {
      d.error(o->pointer("run"), "describes a whole run: give its length (\"total_tokens\", "
                                 "\"dataset_samples\" or \"iterations\")");
    }
  }
  o->report_unknown_keys();
  if (d.count() != errors_before) return std::nullopt;
  return t;
}

std::vector<int64_t> read_integer_list(const json& v, const std::string& pointer, Diagnostics& d,
                                       int64_t min) {
  std::vector<int64_t> out;
  if (const json::array_t* items = read_array(v, pointer, d, "integers")) {
    for (size_t i = 0; i < items->size(); ++i) {
      if (auto x = read_integer((*items)[i], child_pointer(pointer, i), d, min, INT32_MAX)) {
        out.push_back(*x);
      }
    }
  }
  return out;
}

std::optional<models::ParallelPlan> read_plan(const json& value, const std::string& pointer,
                                              Diagnostics& d) {
  auto o = JsonObject::open(value, pointer, d);
  if (!o) return std::nullopt;
  const size_t errors_before = d.count();
  models::ParallelPlan p;
  if (auto v = o->integer("dp", Need::kOptional, 1)) p.dp = static_cast<int>(*v);
  if (auto v = o->integer("tp", Need::kOptional, 1)) p.tp = static_cast<int>(*v);
  if (auto v = o->integer("pp", Need::kOptional, 1)) p.pp = static_cast<int>(*v);
  if (auto v = o->integer("cp", Need::kOptional, 1)) p.cp = static_cast<int>(*v);
  if (auto v = o->integer("ep", Need::kOptional, 1)) p.ep = static_cast<int>(*v);
  if (auto v = o->integer("etp", Need::kOptional, 1)) p.etp = static_cast<int>(*v);
  if (auto v = o->integer("virtual_stages", Need::kOptional, 1)) p.virtual_stages = static_cast<int>(*v);
  const auto schedules = names_of(models::kAllSchedules, models::schedule_name);
  if (auto v = o->choice("schedule", Need::kOptional, schedules, "pipeline schedule")) {
    p.schedule = models::kAllSchedules[*v];
  }
  if (auto v = o->integer("zero_stage", Need::kOptional, 0, 3)) p.zero_stage = static_cast<int>(*v);
  if (auto v = o->boolean("sequence_parallel", Need::kOptional)) p.sequence_parallel = *v;
  if (auto v = o->bytes("bucket", Need::kOptional)) p.bucket = *v;
  if (auto v = o->boolean("overlap_grad_reduce", Need::kOptional)) p.overlap_grad_reduce = *v;
  // ZeRO-3's gathers and gradient reduction, as the framework does them.
  const auto zero3_only = [&](std::string_view key) {
    if (p.zero_stage != 3) {
      d.error(o->pointer(key),
              "applies to ZeRO-3 only (zero_stage is " + std::to_string(p.zero_stage) +
                  "): with ZeRO-1/2 parameters are gathered once, after the optimizer step");
    }
  };
  for (auto [key, field] : {std::pair{"overlap_param_gather", &p.overlap_param_gather},
                            {"per_parameter_gather", &p.per_parameter_gather},
                            {"gather_copies_per_rank", &p.gather_copies_per_rank},
                            {"grad_all_reduce", &p.grad_all_reduce}}) {
    if (auto v = o->boolean(key, Need::kOptional)) {
      *field = *v;
      zero3_only(key);
    }
  }
  if (auto v = o->integer("persistence_threshold", Need::kOptional, 0, INT64_MAX)) {
    p.persistence_threshold = *v;
    if (!p.per_parameter_gather) {
      d.error(o->pointer("persistence_threshold"),
              "applies to per-parameter gathers only (set \"per_parameter_gather\": true)");
    }
  }
  std::vector<std::string_view> algorithms;
  for (CollectiveAlgorithm a : {CollectiveAlgorithm::kAuto, CollectiveAlgorithm::kRing,
                                CollectiveAlgorithm::kTree, CollectiveAlgorithm::kHalvingDoubling,
                                CollectiveAlgorithm::kHierarchical, CollectiveAlgorithm::kTorus2D,
                                CollectiveAlgorithm::kCrossRegion}) {
    algorithms.push_back(algorithm_name(a));
  }
  if (auto v = o->choice("dp_algorithm", Need::kOptional, algorithms, "collective algorithm")) {
    p.dp_algorithm = *algorithm_from_name(algorithms[*v]);
  }
  if (auto v = o->choice("tp_comm_model", Need::kOptional, kTpCommModels, "tp_comm_model")) {
    p.tp_comm_analytical = *v == 0;
  }
  if (auto v = o->boolean("tp_comm_overlap", Need::kOptional)) p.tp_comm_overlap = *v;
  if (const json* v = o->get("stage_layers", Need::kOptional, "")) {
    if (v->is_string() && *v == "balanced") {
      p.balance_stages = true;
    } else if (v->is_array()) {
      for (int64_t x : read_integer_list(*v, o->pointer("stage_layers"), d, 0))
        p.stage_layers.push_back(static_cast<int>(x));
    } else if (!(v->is_string() && *v == "even")) {
      d.error(o->pointer("stage_layers"),
              "expected an array of layer counts, \"even\" or \"balanced\", got " + describe(*v));
    }
  }
  if (const json* v = o->get("replica_micro_batch", Need::kOptional, "")) {
    if (v->is_string() && *v == "balanced") {
      p.balance_replicas = true;
    } else if (v->is_array()) {
      p.replica_micro_batch = read_integer_list(*v, o->pointer("replica_micro_batch"), d, 1);
    } else if (!(v->is_string() && *v == "even")) {
      d.error(o->pointer("replica_micro_batch"),
              "expected an array of micro-batch sizes, \"even\" or \"balanced\", got " + describe(*v));
    }
  }
  if (const json* v = o->get("tp_shares", Need::kOptional, "")) {
    const std::string ptr = o->pointer("tp_shares");
    if (const json::array_t* items = read_array(*v, ptr, d, "fractions")) {
      for (size_t i = 0; i < items->size(); ++i) {
        if (auto x = read_number((*items)[i], child_pointer(ptr, i), d, 0)) p.tp_shares.push_back(*x);
      }
    }
  }
  if (const json* v = o->get("axis_order", Need::kOptional, "")) {
    const std::string ptr = o->pointer("axis_order");
    if (const json::array_t* items = read_array(*v, ptr, d, "axis names")) {
      p.axis_order.clear();
      for (size_t i = 0; i < items->size(); ++i) {
        if (auto x = read_choice((*items)[i], child_pointer(ptr, i), d, kAxisNames, "axis")) {
          p.axis_order.push_back(static_cast<models::ParallelAxis>(*x));
        }
      }
    }
  }
  if (const json* v = o->get("rank_map", Need::kOptional, "")) {
    for (int64_t x : read_integer_list(*v, o->pointer("rank_map"), d, 0)) p.rank_map.push_back(static_cast<int>(x));
  }
  if (auto v = o->integer("sync_every", Need::kOptional, 1)) p.sync_every = static_cast<int>(*v);
  if (auto v = o->boolean("shard_classifier", Need::kOptional)) p.shard_classifier = *v;
  o->report_unknown_keys();
  if (d.count() != errors_before) return std::nullopt;
  return p;
}

}  // namespace

std::optional<TrainingSection> read_training(const json* model, const json* training,
                                             const json* parallelism, const std::string& source,
                                             Diagnostics& d) {
  TrainingSection out;
  const size_t errors_before = d.count();
  std::optional<models::ModelSpec> m;
  if (model == nullptr) {
    d.error("/model",
            "missing: a training scenario needs \"model\" (a preset, an hf_config or a family)");
  } else {
    m = read_model(*model, "/model", source, d);
  }
  std::optional<models::TrainingSetup> t = models::TrainingSetup{};
  if (training != nullptr) t = read_setup(*training, "/training", d);
  std::optional<models::ParallelPlan> p = models::ParallelPlan{};
  if (parallelism != nullptr) p = read_plan(*parallelism, "/parallelism", d);
  if (!m || !t || !p || d.count() != errors_before) return out;
  // Only transformers take sequences; elsewhere the key would be ignored.
  if (t->seq_len > 0 && !models::is_transformer(m->family)) {
    d.error("/training/seq_len", "applies to transformer models; the " +
                                     std::string(models::model_family_name(m->family)) +
                                     " family takes no sequence");
    return out;
  }
  out.spec.model = *m;
  out.spec.training = *t;
  out.spec.plan = *p;
  if (training != nullptr && training->is_object() && training->contains("batch_rampup")) {
    out.spec.batch_schedule_key = "batch_rampup";
  }
  if (!t->batch_phases.empty() && p->sync_every > 1) {
    d.error("/training/" + out.spec.batch_schedule_key,
            "a batch-size schedule is simulated on synchronizing steps; local SGD "
            "(parallelism.sync_every > 1) alternates two step graphs: give one or the other");
    return out;
  }
  out.valid = true;
  return out;
}

namespace {

// A collective reference's "sizes": [{"bytes": n, "time_us": t}, ...], sizes increasing.
bool read_reference_sizes(JsonObject& o, std::vector<std::pair<Bytes, double>>& out) {
  Diagnostics& d = o.diagnostics();
  const json* sizes = o.get("sizes", Need::kRequired,
                            "an array of {\"bytes\": n, \"time_us\": t}, sizes increasing");
  if (sizes == nullptr) return false;
  const std::string pointer = o.pointer("sizes");
  if (!sizes->is_array() || sizes->empty()) {
    d.error(pointer, "expected a non-empty array of {\"bytes\": n, \"time_us\": t}");
    return false;
  }
  const size_t errors = d.count();
  for (size_t i = 0; i < sizes->size(); ++i) {
    auto row = JsonObject::open((*sizes)[i], child_pointer(pointer, i), d);
    if (!row) continue;
    // nccl-tests prints sizes in bytes; a size such as "1MiB" reads too.
    const json* raw = row->get("bytes", Need::kRequired, "a size in bytes or such as \"1MiB\"");
    std::optional<Bytes> bytes;
    if (raw != nullptr && raw->is_number_integer()) {
      bytes = Bytes(raw->get<int64_t>());
    } else if (raw != nullptr) {
      bytes = read_bytes(*raw, row->pointer("bytes"), d);
    }
    const auto time = row->number("time_us", Need::kRequired, 0);
    row->report_unknown_keys();
    if (!bytes || !time) continue;
    if (bytes->count() <= 0 || !(*time > 0)) {
      d.error(row->pointer(), "expected a positive size and a positive time");
      continue;
    }
    if (!out.empty() && *bytes <= out.back().first) {
      d.error(row->pointer("bytes"), "expected sizes in increasing order, got " +
                                         std::to_string(bytes->count()) + " after " +
                                         std::to_string(out.back().first.count()));
      continue;
    }
    out.emplace_back(*bytes, *time);
  }
  return d.count() == errors;
}

}  // namespace

std::optional<Reference> read_reference(const json& value, const std::string& pointer,
                                        Diagnostics& d) {
  auto o = JsonObject::open(value, pointer, d);
  if (!o) return std::nullopt;
  static constexpr std::string_view kMetrics[] = {
      "iteration_time_s", "samples_per_s",     "tokens_per_s", "achieved_tflops_per_device", "mfu",
      "time_to_train_s",  "collective_time_us"};
  constexpr size_t kCollectiveTime = 6;
  Reference r;
  const auto source = o->string("source", Need::kRequired, "where the figure was published");
  const auto metric = o->choice("metric", Need::kRequired, kMetrics, "reference metric");
  if (auto v = o->string("note", Need::kOptional)) r.note = *v;
  bool valid = source && metric;
  if (metric && *metric == kCollectiveTime) {
    o->reject("value", "a collective_time_us reference gives its times size by size in \"sizes\"");
    valid = read_reference_sizes(*o, r.sizes) && valid;
  } else {
    o->reject("sizes", "only a collective_time_us reference is given size by size");
    const auto value_read = o->number("value", Need::kRequired, 0);
    valid = value_read.has_value() && valid;
    if (value_read) r.value = *value_read;
  }
  if (auto v = o->boolean("stack_modelled", Need::kOptional)) r.stack_modelled = *v;
  if (auto v = o->string("stack_note", Need::kOptional)) r.stack_note = *v;
  if (!r.stack_modelled && r.stack_note.empty()) {
    d.error(o->pointer("stack_note"),
            "a case whose stack is not modelled (\"stack_modelled\": false) says why here");
    valid = false;
  }
  o->report_unknown_keys();
  if (!valid) return std::nullopt;
  r.source = *source;
  r.metric = std::string(kMetrics[*metric]);
  return r;
}

// "parallelism.tp: ..." -> ("/parallelism/tp", "...").
void resolve_training(const TrainingSection& section, Scenario& out) {
  out.workload_kind = WorkloadKind::kTraining;
  if (section.valid) out.training = section.spec;
}

}  // namespace dtsim::scenario_detail
