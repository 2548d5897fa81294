// The faulty device's compiled part: its PrivateUse1 hooks and its generator objects.
//
// torch gives a Python PrivateUse1 backend hooks for availability only; `torch.Generator(device="faulty")` and the
// per-device default generators come from the hooks interface a C++ backend registers (getNewGenerator,
// getDefaultGenerator). A faulty generator holds a CPU generator and forwards to it, so a device seeded like CPU
// draws CPU's numbers: the device's generic path (device.py) hands that CPU generator to the CPU kernel a random op
// runs on. Every choice a seeded bug can change (the CPU generator a new or cloned generator gets, the seed kept) is
// a named step the Python side answers (`install(step)`), so the bugs live with the others, in Python
// (suite_bugs/device_generator.py).

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Generator.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/GeneratorImpl.h>
#include <torch/csrc/utils/pybind.h>

#include <atomic>
#include <deque>
#include <mutex>

namespace py = pybind11;

namespace {

constexpr uint64_t kDefaultSeed = 67280421310721ULL;  // what a fresh CUDA generator starts from

py::object* step_hook = nullptr;  // never freed: it must outlive the interpreter's teardown

// The Python side's answer for step `name`, given its arguments and the value the device would use. GIL held.
py::object answer(const char* name, py::tuple args, py::object value) {
  if (step_hook == nullptr || step_hook->is_none()) {
    return value;
  }
  return (*step_hook)(name, std::move(args), std::move(value));
}

at::Generator answered_cpu_generator(const char* name, py::tuple args, const at::Generator& proposed) {
  py::gil_scoped_acquire gil;
  at::Generator chosen = answer(name, std::move(args), py::cast(proposed)).cast<at::Generator>();
  TORCH_CHECK(chosen.device().is_cpu(), "the faulty device's step ", name, " must answer a CPU generator");
  return chosen;
}

struct FaultyGeneratorImpl : public c10::GeneratorImpl {
  FaultyGeneratorImpl(c10::DeviceIndex index, at::Generator cpu)
      : c10::GeneratorImpl(c10::Device(c10::DeviceType::PrivateUse1, index),
                           c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)),
        cpu_(std::move(cpu)) {}

  void set_current_seed(uint64_t seed) override {
    uint64_t kept = seed;
    {
      py::gil_scoped_acquire gil;
      kept = answer("faulty.generator_seed", py::make_tuple(device().index(), seed), py::int_(seed)).cast<uint64_t>();
    }
    cpu_.set_current_seed(kept);
  }
  uint64_t current_seed() const override { return cpu_.current_seed(); }
  uint64_t seed() override { return cpu_.seed(); }
  void set_offset(uint64_t offset) override { cpu_.set_offset(offset); }
  uint64_t get_offset() const override { return cpu_.get_offset(); }
  void set_state(const c10::TensorImpl& state) override { cpu_.unsafeGetGeneratorImpl()->set_state(state); }
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override { return cpu_.unsafeGetGeneratorImpl()->get_state(); }

  const at::Generator& cpu() const { return cpu_; }

 private:
  FaultyGeneratorImpl* clone_impl() const override {
    at::Generator copy = answered_cpu_generator("faulty.generator_clone", py::make_tuple(device().index(), cpu_),
                                                cpu_.clone());
    return new FaultyGeneratorImpl(device().index(), std::move(copy));
  }

  at::Generator cpu_;
};

std::atomic<int64_t> generators_made{0};

c10::DeviceIndex current_index() {
  py::gil_scoped_acquire gil;
  return answer("faulty.current_device", py::make_tuple(), py::int_(0)).cast<c10::DeviceIndex>();
}

struct FaultyHooks final : public at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return true; }
  bool hasPrimaryContext(c10::DeviceIndex) const override { return true; }

  at::Generator getNewGenerator(c10::DeviceIndex index) const override {
    if (index < 0) {
      index = current_index();
    }
    at::Generator cpu = answered_cpu_generator("faulty.new_generator", py::make_tuple(index),
                                               at::detail::createCPUGenerator(kDefaultSeed));
    generators_made++;
    return at::make_generator<FaultyGeneratorImpl>(index, std::move(cpu));
  }

  // Device `index`'s default generator: it draws from the CPU generator the device's runtime keeps for the index
  // (torch.faulty.get_rng_state reads the same one).
  const at::Generator& getDefaultGenerator(c10::DeviceIndex index) const override {
    if (index < 0) {
      index = current_index();
    }
    std::lock_guard<std::mutex> lock(mutex_);
    while (static_cast<size_t>(index) >= defaults_.size()) {
      defaults_.emplace_back();
    }
    if (!defaults_[index].defined()) {
      py::gil_scoped_acquire gil;
      at::Generator cpu = answer("faulty.default_generator", py::make_tuple(index), py::none()).cast<at::Generator>();
      defaults_[index] = at::make_generator<FaultyGeneratorImpl>(index, std::move(cpu));
    }
    return defaults_[index];
  }

 private:
  mutable std::mutex mutex_;
  mutable std::deque<at::Generator> defaults_;  // a deque: growing it keeps the references handed out valid
};

// The CPU generator a faulty generator draws from (itself, not a copy: draws move it on).
at::Generator cpu_generator(const at::Generator& generator) {
  auto* impl = dynamic_cast<FaultyGeneratorImpl*>(generator.unsafeGetGeneratorImpl());
  TORCH_CHECK(impl != nullptr, "not a faulty generator: a generator of ", generator.device());
  return impl->cpu();
}

void install(py::object hook) {
  if (step_hook == nullptr) {
    step_hook = new py::object();
  }
  *step_hook = std::move(hook);
}

// torch keeps one PrivateUse1 hooks object per process, registered once, before the device's first use.
void register_hooks() {
  static FaultyHooks* hooks = [] {
    auto* made = new FaultyHooks();
    at::RegisterPrivateUse1HooksInterface(made);
    return made;
  }();
  (void)hooks;
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "The faulty device's compiled part: its PrivateUse1 hooks and generators (torchcts.testing.faulty)";
  m.def("install", &install, "Set the function (name, args, value) -> value that answers the device's named steps");
  m.def("register_hooks", &register_hooks, "Register the device's PrivateUse1 hooks (once per process)");
  m.def("cpu_generator", &cpu_generator, "The CPU generator a faulty generator draws from");
  m.def(
      "default_generator",
      [](c10::DeviceIndex index) { return at::detail::getPrivateUse1Hooks().getDefaultGenerator(index); },
      "Device `index`'s default generator (the hooks' getDefaultGenerator)");
  m.def("generators_made", []() { return generators_made.load(); }, "How many generators the device has made");
}
