// The validation report's three files, from a RealValidationView.
#include "reports/real_validation_report.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "reports/output_set.h"

namespace dtsim {

namespace {

nlohmann::ordered_json figure_json(const executor::ErrorFigure& f) {
  return {{"measured_s", f.measured_s},
          {"measured_p10_s", f.measured_p10_s},
          {"measured_p90_s", f.measured_p90_s},
          {"predicted_s", f.predicted_s},
          {"error", std::isfinite(f.error) ? nlohmann::ordered_json(f.error) : nullptr}};
}

std::string ms(double s) { return fmt::format("{:.2f} ms", s * 1e3); }
std::string spread(const executor::ErrorFigure& f) {
  return fmt::format("{} ({:.2f}–{:.2f})", ms(f.measured_s), f.measured_p10_s * 1e3,
                     f.measured_p90_s * 1e3);
}

}  // namespace

double machine_speed_ratio(const RealValidationView& v) {
  if (v.calibration_reference_s <= 0 || v.run_reference_s <= 0) return 0;
  return v.run_reference_s / v.calibration_reference_s;
}

double error_at_run_speed(const RealValidationView& v) {
  const double ratio = machine_speed_ratio(v);
  if (ratio <= 0 || v.comparison == nullptr) return std::nan("");
  return executor::relative_error(v.comparison->step.predicted_s * ratio,
                                  v.comparison->step.measured_s);
}

std::string signed_percent(double error) {
  return std::isfinite(error) ? fmt::format("{:+.1f}%", 100 * error) : std::string("n/a");
}

size_t median_step_index(const executor::StepComparison& c) {
  size_t best = 0;
  for (size_t i = 0; i < c.measured_steps_s.size(); ++i) {
    if (std::abs(c.measured_steps_s[i] - c.step.measured_s) <
        std::abs(c.measured_steps_s[best] - c.step.measured_s)) {
      best = i;
    }
  }
  return best;
}

nlohmann::ordered_json real_validation_json(const RealValidationView& v) {
  const executor::StepComparison& c = *v.comparison;
  const TaskGraph& g = *v.graph;
  nlohmann::ordered_json doc;
  doc["format"] = "dtsim-validation";
  doc["version"] = 1;
  doc["scenario"] = v.scenario;
  doc["source"] = v.source;
  doc["backend"] = v.measured->backend;
  doc["library"] = v.measured->library;
  doc["blas"] = v.measured->blas;
  doc["cost_model"] = v.cost_model;
  doc["costs"] = v.costs;
  doc["ranks"] = v.measured->ranks.size();
  doc["warmup"] = v.measured->warmup;
  doc["iterations"] = c.steps;
  doc["measured_step_s"] = c.step.measured_s;
  doc["measured_step_p10_s"] = c.step.measured_p10_s;
  doc["measured_step_p90_s"] = c.step.measured_p90_s;
  doc["predicted_step_s"] = c.step.predicted_s;
  doc["error"] = figure_json(c.step)["error"];
  doc["measured_steps_s"] = c.measured_steps_s;
  if (const double ratio = machine_speed_ratio(v); ratio > 0) {
    doc["machine_speed"] = {{"calibration_reference_s", v.calibration_reference_s},
                            {"run_reference_s", v.run_reference_s},
                            {"run_over_calibration", ratio},
                            {"error_at_run_speed", error_at_run_speed(v)}};
  }
  auto kinds = nlohmann::ordered_json::array();
  for (const executor::KindComparison& k : c.kinds) {
    nlohmann::ordered_json j = {{"kind", task_kind_name(k.kind)}, {"tasks", k.tasks}};
    j.update(figure_json(k.busy));
    kinds.push_back(j);
  }
  doc["per_kind"] = kinds;
  doc["per_kind_note"] =
      "each kind's task durations summed over every rank, per step (busy time, not the step's "
      "critical path); a collective's measured time includes waiting for its slowest member";
  auto ranks = nlohmann::ordered_json::array();
  for (size_t i = 0; i < c.ranks.size(); ++i) {
    const executor::RankComparison& r = c.ranks[i];
    const executor::MeasuredRank& m = v.measured->ranks[i];
    nlohmann::ordered_json j = {{"rank", r.rank}};
    j.update(figure_json(r.finish));
    j["compute"] = figure_json(r.compute_busy);
    j["clock_offset_ns"] = r.clock.offset_ns;
    j["clock_uncertainty_ns"] = r.clock.uncertainty_ns;
    j["operand_bytes"] = m.operand_bytes;
    j["peak_allocated_bytes"] = m.peak_allocated_bytes;
    ranks.push_back(j);
  }
  doc["per_rank"] = ranks;
  auto tasks = nlohmann::ordered_json::array();
  for (const executor::TaskComparison& t : c.tasks) {
    const TaskView view = g.task(t.task);
    tasks.push_back({{"task", t.task},
                     {"rank", view.rank},
                     {"kind", task_kind_name(view.kind)},
                     {"stream", g.streams()[view.stream]},
                     {"name", view.name},
                     {"measured_start_s", t.measured_start_s},
                     {"measured_s", t.measured_s},
                     {"predicted_start_s", t.predicted_start_s},
                     {"predicted_s", t.predicted_s}});
  }
  doc["tasks"] = tasks;
  auto ops = nlohmann::ordered_json::array();
  for (const executor::OpComparison& o : v.ops) {
    ops.push_back({{"name", o.op.name},
                   {"kind", kernel_kind_name(o.op.kind)},
                   {"pass", op_pass_name(o.op.pass)},
                   {"instances", o.instances},
                   {"measured_in_step_s", o.measured_s},
                   {"predicted_s", o.predicted_s},
                   {"share_of_gap_s", o.total_gap_s}});
  }
  doc["per_op"] = ops;
  if (v.feedback) {
    const executor::FeedbackFigures& f = *v.feedback;
    if (!f.available) {
      doc["feedback"] = {{"available", false}, {"why_not", f.why_not}};
    } else {
      doc["feedback"] = {{"available", true},
                         {"predicted_step_s", f.predicted_s},
                         {"error", f.error},
                         {"fed_steps", f.fed_steps},
                         {"held_steps", f.held_steps},
                         {"held_measured_step_s", f.held_measured_s},
                         {"held_isolated_error", f.held_isolated_error},
                         {"held_predicted_step_s", f.held_predicted_s},
                         {"held_error", f.held_error}};
    }
  }
  return doc;
}

std::string real_validation_markdown(const RealValidationView& v) {
  const executor::StepComparison& c = *v.comparison;
  const TaskGraph& g = *v.graph;
  std::string md = fmt::format("# Validation of {} on this machine\n\n", v.scenario);
  md += fmt::format(
      "The step of `{}` ran for real on {} {} ranks ({}, {}): {} warm-up and {} measured "
      "steps, against the simulator's prediction with the {} cost model{}. An error is "
      "(predicted − measured) / measured: positive when the prediction is too slow.\n\n",
      v.source, v.measured->ranks.size(), v.measured->backend, v.measured->library,
      v.measured->blas, v.measured->warmup, c.steps, v.cost_model,
      v.costs.empty() ? "" : " over `" + v.costs + "`");
  md += "| | measured, median (p10–p90) | predicted | error |\n|---|---|---|---|\n";
  md += fmt::format("| step | {} | {} | {} |\n\n", spread(c.step), ms(c.step.predicted_s),
                    signed_percent(c.step.error));
  if (const double ratio = machine_speed_ratio(v); ratio > 0) {
    md += fmt::format(
        "The machine's speed moved between the calibration and the run: a reference GEMM took "
        "{:.3f} ms while the database was measured and {:.3f} ms around the run ({:+.1f}%). "
        "With the whole predicted step scaled by that ratio (its communication too, which "
        "a CPU rank moves with its own core), the error would be {}; the error above is the "
        "model's and the drift's together.\n\n",
        v.calibration_reference_s * 1e3, v.run_reference_s * 1e3, 100 * (ratio - 1),
        signed_percent(error_at_run_speed(v)));
  }
  md += "Busy time per task kind (durations summed over every rank, per step):\n\n";
  md += "| kind | tasks | measured (p10–p90) | predicted | error |\n|---|---|---|---|---|\n";
  for (const executor::KindComparison& k : c.kinds) {
    md += fmt::format("| {} | {} | {} | {} | {} |\n", task_kind_name(k.kind), k.tasks,
                      spread(k.busy), ms(k.busy.predicted_s), signed_percent(k.busy.error));
  }
  md +=
      "\nPer rank (its last task's end; its compute tasks' summed durations; its clock "
      "against rank 0's):\n\n";
  md +=
      "| rank | finish, measured | predicted | error | compute, measured | predicted | error "
      "| clock offset ± uncertainty |\n|---|---|---|---|---|---|---|---|\n";
  for (const executor::RankComparison& r : c.ranks) {
    md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {:.1f} ± {:.1f} µs |\n", r.rank,
                      spread(r.finish), ms(r.finish.predicted_s), signed_percent(r.finish.error),
                      ms(r.compute_busy.measured_s), ms(r.compute_busy.predicted_s),
                      signed_percent(r.compute_busy.error), r.clock.offset_ns * 1e-3,
                      r.clock.uncertainty_ns * 1e-3);
  }
  // The tasks the prediction misses most, in absolute time.
  std::vector<const executor::TaskComparison*> worst;
  for (const executor::TaskComparison& t : c.tasks) worst.push_back(&t);
  std::sort(worst.begin(), worst.end(), [](const auto* a, const auto* b) {
    return std::abs(a->predicted_s - a->measured_s) > std::abs(b->predicted_s - b->measured_s);
  });
  worst.resize(std::min<size_t>(worst.size(), 10));
  md += "\nThe tasks whose predicted duration is furthest from the measured median:\n\n";
  md +=
      "| task | rank | kind | stream | measured | predicted | error |\n"
      "|---|---|---|---|---|---|---|\n";
  for (const executor::TaskComparison* t : worst) {
    const TaskView view = g.task(t->task);
    const double e = t->measured_s > 0 ? (t->predicted_s - t->measured_s) / t->measured_s : NAN;
    md += fmt::format("| {} \"{}\" | {} | {} | {} | {} | {} | {} |\n", t->task, view.name,
                      view.rank, task_kind_name(view.kind), g.streams()[view.stream],
                      ms(t->measured_s), ms(t->predicted_s), signed_percent(e));
  }
  if (!v.ops.empty()) {
    md +=
        "\nThe ops whose time inside the steps differs most from their price (share of the "
        "gap: instances × (predicted − measured), summed over every rank):\n\n";
    md +=
        "| op | kind | pass | instances | in the step | predicted | share of the gap |\n"
        "|---|---|---|---|---|---|---|\n";
    for (size_t i = 0; i < std::min<size_t>(v.ops.size(), 10); ++i) {
      const executor::OpComparison& o = v.ops[i];
      md += fmt::format("| {} | {} | {} | {} | {:.3f} ms | {:.3f} ms | {:+.2f} ms |\n", o.op.name,
                        kernel_kind_name(o.op.kind), op_pass_name(o.op.pass), o.instances,
                        o.measured_s * 1e3, o.predicted_s * 1e3, o.total_gap_s * 1e3);
    }
  }
  if (v.feedback && v.feedback->available) {
    const executor::FeedbackFigures& f = *v.feedback;
    md += fmt::format(
        "\nFeedback (the ops' in-step times in place of their isolated ones, as "
        "`--update-costs` writes them): predicted {} against {} measured, {} (it was {}); "
        "this reproduces what it was fed. Held out: the first {} steps' op times predict "
        "the last {} steps' median {}: {} ({}), against {} with the isolated costs.\n",
        ms(f.predicted_s), ms(c.step.measured_s), signed_percent(f.error),
        signed_percent(c.step.error), f.fed_steps, f.held_steps, ms(f.held_measured_s),
        ms(f.held_predicted_s), signed_percent(f.held_error),
        signed_percent(f.held_isolated_error));
  } else if (v.feedback) {
    md += "\nFeedback: not computed (" + v.feedback->why_not + ").\n";
  }
  md +=
      "\n`trace.json` (ui.perfetto.dev) shows the measured median step and the predicted "
      "step side by side; `validation.json` holds every figure and every task.\n";
  return md;
}

nlohmann::ordered_json real_validation_trace(const RealValidationView& v) {
  const executor::StepComparison& c = *v.comparison;
  const TaskGraph& g = *v.graph;
  const size_t step = median_step_index(c);
  auto events = nlohmann::ordered_json::array();
  constexpr int kMeasured = 1;
  constexpr int kPredicted = 2;
  events.push_back(
      {{"ph", "M"},
       {"pid", kMeasured},
       {"name", "process_name"},
       {"args",
        {{"name", fmt::format("measured: step {} of {} (the median)", step + 1, c.steps)}}}});
  events.push_back({{"ph", "M"},
                    {"pid", kPredicted},
                    {"name", "process_name"},
                    {"args", {{"name", "predicted (" + v.cost_model + " cost model)"}}}});
  const auto streams = static_cast<int>(g.streams().size());
  std::map<int, bool> named;
  auto thread = [&](int pid, const TaskView& t) {
    const int tid = t.rank * streams + t.stream;
    if (!named[pid * 1000003 + tid]) {
      named[pid * 1000003 + tid] = true;
      events.push_back(
          {{"ph", "M"},
           {"pid", pid},
           {"tid", tid},
           {"name", "thread_name"},
           {"args", {{"name", fmt::format("rank {} · {}", t.rank, g.streams()[t.stream])}}}});
    }
    return tid;
  };
  auto span = [&](int pid, const TaskView& t, TaskId id, double start_s, double end_s) {
    const int tid = thread(pid, t);
    events.push_back({{"ph", "X"},
                      {"pid", pid},
                      {"tid", tid},
                      {"name", std::string(t.name)},
                      {"cat", task_kind_name(t.kind)},
                      {"ts", start_s * 1e6},
                      {"dur", std::max(end_s - start_s, 0.0) * 1e6},
                      {"args", {{"task", id}}}});
  };
  int64_t step_start = INT64_MAX;
  for (const executor::MeasuredRank& r : v.measured->ranks) {
    step_start = std::min(step_start, r.steps[step].start_ns);
  }
  for (const executor::MeasuredRank& r : v.measured->ranks) {
    for (size_t i = 0; i < r.tasks.size(); ++i) {
      const executor::TaskSpan& s = r.steps[step].tasks[i];
      span(kMeasured, g.task(r.tasks[i]), r.tasks[i], (s.start_ns - step_start) * 1e-9,
           (s.end_ns - step_start) * 1e-9);
    }
  }
  for (TaskId id = 0; id < g.num_tasks(); ++id) {
    if (!v.predicted[id].seen) continue;
    span(kPredicted, g.task(id), id, v.predicted[id].start_s, v.predicted[id].end_s);
  }
  return {{"displayTimeUnit", "ms"}, {"traceEvents", events}};
}

void write_real_validation(const std::filesystem::path& folder, const RealValidationView& v) {
  // validation.json is the set's summary: it lands last and lists the other two.
  OutputSet outputs(folder, "validation.json");
  outputs.write("validation.md", [&](std::ostream& f) { f << real_validation_markdown(v); });
  outputs.write("trace.json",
                [&](std::ostream& f) { f << real_validation_trace(v).dump() << "\n"; });
  outputs.commit(real_validation_json(v), 1);
}

}  // namespace dtsim
