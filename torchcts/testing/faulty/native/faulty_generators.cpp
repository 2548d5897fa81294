// The faulty device's compiled runtime part: generator objects for `torch.Generator(device="faulty")`.
//
// torch gives a Python PrivateUse1 backend no hook for device generators; a C++ one registers a generator
// factory (at::_GeneratorRegister), which PrivateUse1HooksInterface::getNewGenerator calls. A faulty generator
// holds a CPU generator and forwards to it, so a device seeded like CPU draws CPU's numbers: the Python side
// (generators.py) hands that CPU generator to the CPU kernel a random op runs on. Every decision a seeded bug
// can change (which CPU generator a new or cloned generator gets, the seed stored) is a named step the Python
// side answers (`install(step)`), so the bugs live with the others, in Python.

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Generator.h>
#include <ATen/core/GeneratorForPrivateuseone.h>
#include <c10/core/GeneratorImpl.h>
#include <torch/csrc/utils/pybind.h>

#include <atomic>

namespace py = pybind11;

namespace {

constexpr uint64_t kDefaultSeed = 67280421310721ULL;  // what a fresh CUDA generator starts from

py::object* step_hook = nullptr;  // never freed: it must outlive the interpreter's teardown
std::atomic<int64_t> made{0};

// The Python side's answer for step `name`, given its arguments and the value the device would use.
py::object step(const char* name, py::tuple args, py::object value) {
  if (step_hook == nullptr || step_hook->is_none()) {
    return value;
  }
  return (*step_hook)(name, args, value);
}

at::Generator answered_cpu_generator(const char* name, py::tuple args, const at::Generator& proposed) {
  py::gil_scoped_acquire gil;
  py::object answer = step(name, std::move(args), py::cast(proposed));
  at::Generator chosen = answer.cast<at::Generator>();
  TORCH_CHECK(chosen.device().is_cpu(), "faulty generator step ", name, " must answer a CPU generator");
  return chosen;
}

struct FaultyGeneratorImpl : public c10::GeneratorImpl {
  FaultyGeneratorImpl(c10::DeviceIndex index, at::Generator cpu)
      : c10::GeneratorImpl(c10::Device(c10::DeviceType::PrivateUse1, index),
                           c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)),
        cpu_(std::move(cpu)) {}

  void set_current_seed(uint64_t seed) override {
    uint64_t stored = seed;
    {
      py::gil_scoped_acquire gil;
      stored = step("faulty.generator_seed", py::make_tuple(device().index(), seed), py::int_(seed)).cast<uint64_t>();
    }
    cpu_.set_current_seed(stored);
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

c10::DeviceIndex current_index() {
  py::gil_scoped_acquire gil;
  return step("faulty.current_device", py::make_tuple(), py::int_(0)).cast<c10::DeviceIndex>();
}

at::Generator make_generator(c10::DeviceIndex index) {
  if (index < 0) {
    index = current_index();
  }
  at::Generator cpu = answered_cpu_generator("faulty.new_generator", py::make_tuple(index, made.load()),
                                             at::detail::createCPUGenerator(kDefaultSeed));
  made++;
  return at::make_generator<FaultyGeneratorImpl>(index, std::move(cpu));
}

// The CPU generator a faulty generator draws from (shared, not a copy: draws move it on).
at::Generator cpu_generator(const at::Generator& generator) {
  auto* impl = dynamic_cast<FaultyGeneratorImpl*>(generator.unsafeGetGeneratorImpl());
  TORCH_CHECK(impl != nullptr, "not a faulty generator: ", generator.device());
  return impl->cpu();
}

void install(py::object hook) {
  if (step_hook == nullptr) {
    step_hook = new py::object();
  }
  *step_hook = std::move(hook);
}

bool registered = false;

// Register the factory once per process (torch keeps one PrivateUse1 generator factory).
void register_factory() {
  if (!registered) {
    static at::_GeneratorRegister factory(make_generator);
    registered = true;
  }
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "torchcts faulty device: compiled generator objects";
  m.def("install", &install, "Set the Python function that answers the named steps (name, args, value) -> value");
  m.def("register_factory", &register_factory, "Make torch.Generator(device='faulty') build faulty generators");
  m.def("cpu_generator", &cpu_generator, "The CPU generator a faulty generator draws from");
  m.def("generators_made", []() { return made.load(); }, "How many faulty generators were made");
}
