// The callable an event runs: stored in place in its slot (never moved), so scheduling an
// event costs one construction and running it one indirect call.
#pragma once

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

namespace dtsim {

// Like std::function<void()>, without copies or moves: the engine constructs the callable
// straight into the slot that holds it (slots never move) and destroys it after it ran.
// Callables up to kInline bytes live inside; larger ones on the heap.
class EventCallback {
 public:
  static constexpr size_t kInline = 32;

  EventCallback() = default;
  EventCallback(const EventCallback&) = delete;
  EventCallback& operator=(const EventCallback&) = delete;
  ~EventCallback() { reset(); }

  template <typename F>
  void emplace(F&& f) {
    using T = std::decay_t<F>;
    reset();
    if constexpr (sizeof(T) <= kInline && alignof(T) <= alignof(std::max_align_t)) {
      new (storage_) T(std::forward<F>(f));
      invoke_ = [](void* p) { (*static_cast<T*>(p))(); };
      if constexpr (!std::is_trivially_destructible_v<T>) {
        destroy_ = [](void* p) { static_cast<T*>(p)->~T(); };
      }
    } else {
      *reinterpret_cast<T**>(storage_) = new T(std::forward<F>(f));
      invoke_ = [](void* p) { (**static_cast<T**>(p))(); };
      destroy_ = [](void* p) { delete *static_cast<T**>(p); };
    }
  }
  void operator()() { invoke_(storage_); }
  void reset() {
    if (destroy_) destroy_(storage_);
    invoke_ = nullptr;
    destroy_ = nullptr;
  }
  explicit operator bool() const { return invoke_ != nullptr; }

 private:
  alignas(std::max_align_t) std::byte storage_[kInline];
  void (*invoke_)(void*) = nullptr;
  void (*destroy_)(void*) = nullptr;
};

}  // namespace dtsim
