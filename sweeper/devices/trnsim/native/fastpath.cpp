// trnsim's eager fast path and storage table in C++ (loaded by fastpath.py).
//
// Storage: a trnsim storage is a StorageImpl over a CPU storage's memory whose DataPtr
// context holds that CPU storage (so the host memory lives exactly as long as the trnsim
// storage). One trnsim storage per host allocation, found by data pointer, so every
// trnsim tensor over the same memory shares one storage, as views on a device do.
//
// Fast kernel: the common case of the Python kernel (kernels.py) without Python: a native
// op, every trnsim argument of an allowed dtype, no device/layout argument. Arguments
// become CPU aliases, the op runs on the host and fresh results become trnsim tensors;
// in-place ops return their own argument; view ops rewire metadata on the trnsim tensors.
// Anything else (a policy other than native, a refused dtype, a float32 math that rounds)
// goes to the Python kernel, registered for the same op on PrivateUse2.

#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <ATen/ops/empty_strided.h>
#include <c10/core/StorageImpl.h>
#include <c10/core/TensorImpl.h>
#include <torch/library.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

using at::Tensor;
using c10::DispatchKey;
using c10::DispatchKeySet;
using c10::IValue;

const c10::Device kTrn(c10::DeviceType::PrivateUse1, 0);
const DispatchKeySet kCpuKeys(DispatchKey::CPU);
const DispatchKeySet kPythonKernel(DispatchKey::PrivateUse2);

// ---------------------------------------------------------------- storage table

struct Holder {
  c10::Storage cpu;
  void* ptr;
  size_t nbytes;
};

std::recursive_mutex g_mu;
std::unordered_map<void*, c10::weak_intrusive_ptr<c10::StorageImpl>> g_table;
int64_t g_allocated = 0, g_peak = 0, g_allocations = 0, g_live = 0;

void release(void* ctx) {
  auto* holder = static_cast<Holder*>(ctx);
  {
    std::lock_guard<std::recursive_mutex> lock(g_mu);
    auto it = g_table.find(holder->ptr);
    if (it != g_table.end() && it->second.expired()) g_table.erase(it);
    g_allocated -= static_cast<int64_t>(holder->nbytes);
    g_live -= 1;
  }
  delete holder;  // drops the host storage
}

c10::Storage empty_storage() {
  return c10::Storage(c10::make_intrusive<c10::StorageImpl>(
      c10::StorageImpl::use_byte_size_t(), 0, c10::DataPtr(nullptr, kTrn), nullptr, false));
}

// The trnsim storage over `cpu`'s memory (made once per allocation).
c10::Storage storage_for(const c10::Storage& cpu) {
  void* ptr = const_cast<void*>(cpu.data());
  if (ptr == nullptr) return empty_storage();
  size_t nbytes = cpu.nbytes();
  std::lock_guard<std::recursive_mutex> lock(g_mu);
  auto it = g_table.find(ptr);
  if (it != g_table.end()) {
    auto strong = it->second.lock();
    if (strong) return c10::Storage(std::move(strong));
  }
  auto* holder = new Holder{cpu, ptr, nbytes};
  auto impl = c10::make_intrusive<c10::StorageImpl>(
      c10::StorageImpl::use_byte_size_t(), nbytes, c10::DataPtr(ptr, holder, &release, kTrn), nullptr, false);
  g_table.insert_or_assign(ptr, c10::weak_intrusive_ptr<c10::StorageImpl>(impl));
  g_allocations += 1;
  g_live += 1;
  g_allocated += static_cast<int64_t>(nbytes);
  if (g_allocated > g_peak) g_peak = g_allocated;
  return c10::Storage(std::move(impl));
}

void copy_math_bits(c10::TensorImpl* to, const Tensor& from) {
  if (from.is_conj()) to->_set_conj(true);
  if (from.is_neg()) to->_set_neg(true);
}

// A trnsim tensor over `cpu`'s memory: same offset, sizes, strides, dtype, math bits.
Tensor to_trn(const Tensor& cpu) {
  auto out = at::detail::make_tensor<c10::TensorImpl>(
      storage_for(cpu.storage()), DispatchKeySet(DispatchKey::PrivateUse1), cpu.dtype());
  auto* impl = out.unsafeGetTensorImpl();
  impl->set_sizes_and_strides(cpu.sizes(), cpu.strides(), cpu.storage_offset());
  copy_math_bits(impl, cpu);
  return out;
}

// A CPU tensor over a trnsim tensor's memory.
Tensor to_host(const Tensor& t) {
  const c10::DataPtr& dp = t.storage().data_ptr();
  if (dp.get_deleter() != &release) {
    TORCH_CHECK(dp.get() == nullptr, "trnsim tensor with unknown storage");
    auto empty = at::empty_strided(t.sizes(), t.strides(), t.options().device(c10::kCPU));
    copy_math_bits(empty.unsafeGetTensorImpl(), t);
    return empty;
  }
  c10::Storage cpu = static_cast<Holder*>(dp.get_context())->cpu;
  auto out = at::detail::make_tensor<c10::TensorImpl>(std::move(cpu), kCpuKeys, t.dtype());
  auto* impl = out.unsafeGetTensorImpl();
  impl->set_sizes_and_strides(t.sizes(), t.strides(), t.storage_offset());
  copy_math_bits(impl, t);
  return out;
}

// Make trnsim tensor `t` a view of `cpu`'s memory (the host moved or resized it).
void repoint(const Tensor& t, const Tensor& cpu) {
  auto* impl = t.unsafeGetTensorImpl();
  impl->set_storage_keep_dtype(storage_for(cpu.storage()));
  impl->set_sizes_and_strides(cpu.sizes(), cpu.strides(), cpu.storage_offset());
}

// ---------------------------------------------------------------- fast kernels

enum Kind { kFunctional = 0, kInplace = 1, kView = 2, kInplaceView = 3 };

struct OpState {
  std::string name;
  int kind;
  int dtype_arg;  // index of a `dtype` argument, or -1
  std::atomic<bool> python{false};
  std::atomic<int64_t> count{0};
};

std::vector<std::unique_ptr<OpState>> g_ops;
std::atomic<uint64_t> g_dtypes{0};
std::atomic<bool> g_counting{false};
std::atomic<bool> g_enabled{true};
std::string g_error;

inline bool on_trn(const Tensor& t) { return t.defined() && t.device().type() == c10::DeviceType::PrivateUse1; }

inline bool allowed(c10::ScalarType s) {
  return (g_dtypes.load(std::memory_order_relaxed) >> static_cast<int>(s)) & 1u;
}

bool returns_allowed(torch::jit::Stack* stack, size_t nret) {
  for (auto it = stack->end() - nret; it != stack->end(); ++it) {
    if (it->isTensor()) {
      const Tensor& t = it->toTensor();
      if (t.defined() && !allowed(t.scalar_type())) return false;
    } else if (it->isTensorList()) {
      for (const Tensor& t : it->toTensorList()) {
        if (t.defined() && !allowed(t.scalar_type())) return false;
      }
    }
  }
  return true;
}

// Whether every trnsim tensor among the arguments has a dtype the chip has; in `host`
// mode they are also replaced by CPU aliases.
bool prepare(IValue* args, size_t nargs, bool host) {
  for (size_t i = 0; i < nargs; ++i) {
    IValue& v = args[i];
    if (v.isTensor()) {
      const Tensor& t = v.toTensor();
      if (!on_trn(t)) continue;
      if (!allowed(t.scalar_type())) return false;
      if (host) v = IValue(to_host(t));
    } else if (v.isTensorList()) {
      auto list = v.toTensorList();
      bool any = false;
      for (const Tensor& t : list) {
        if (on_trn(t)) {
          if (!allowed(t.scalar_type())) return false;
          any = true;
        }
      }
      if (host && any) {
        c10::List<Tensor> out;
        out.reserve(list.size());
        for (const Tensor& t : list) out.push_back(on_trn(t) ? to_host(t) : t);
        v = IValue(std::move(out));
      }
    } else if (v.isList()) {
      auto list = v.toListRef();
      bool any = false;
      for (const IValue& e : list) {
        if (e.isTensor() && on_trn(e.toTensor())) {
          if (!allowed(e.toTensor().scalar_type())) return false;
          any = true;
        }
      }
      if (host && any) {  // Tensor?[] (index, index_put)
        c10::List<std::optional<Tensor>> out;
        out.reserve(list.size());
        for (const IValue& e : list) {
          if (e.isTensor()) {
            const Tensor& t = e.toTensor();
            out.push_back(on_trn(t) ? std::optional<Tensor>(to_host(t)) : std::optional<Tensor>(t));
          } else {
            out.push_back(std::nullopt);
          }
        }
        v = IValue(std::move(out));
      }
    }
  }
  return true;
}

struct FastKernel final : public c10::OperatorKernel {
  explicit FastKernel(OpState* state) : st(state) {}
  OpState* st;

  void to_python(const c10::OperatorHandle& op, torch::jit::Stack* stack) { op.redispatchBoxed(kPythonKernel, stack); }

  void operator()(const c10::OperatorHandle& op, DispatchKeySet, torch::jit::Stack* stack) {
    if (st->python.load(std::memory_order_relaxed) || !g_enabled.load(std::memory_order_relaxed)) {
      return to_python(op, stack);
    }
    const auto& schema = op.schema();
    const size_t nargs = schema.arguments().size();
    const size_t nret = schema.returns().size();
    IValue* args = &*(stack->end() - nargs);
    if (st->dtype_arg >= 0) {
      const IValue& d = args[st->dtype_arg];
      if (!d.isNone() && !allowed(d.toScalarType())) return to_python(op, stack);
    }
    if (st->kind == kView || st->kind == kInplaceView) {
      if (!prepare(args, nargs, false)) return to_python(op, stack);
      std::vector<IValue> saved;
      if (st->kind == kView) saved.assign(args, args + nargs);
      count(1);
      op.redispatchBoxed(kCpuKeys, stack);
      if (st->kind == kView && !returns_allowed(stack, nret)) {  // view.dtype to a refused dtype
        count(-1);
        torch::jit::drop(*stack, nret);
        for (auto& v : saved) stack->push_back(std::move(v));
        return to_python(op, stack);
      }
      return;
    }
    Tensor self;
    if (st->kind == kInplace) {
      if (!args[0].isTensor() || !on_trn(args[0].toTensor())) return to_python(op, stack);
      self = args[0].toTensor();
    }
    std::vector<IValue> saved(args, args + nargs);
    if (!prepare(args, nargs, true)) {
      std::move(saved.begin(), saved.end(), args);
      return to_python(op, stack);
    }
    Tensor host_self = self.defined() ? args[0].toTensor() : Tensor();
    count(1);
    op.callBoxed(stack);
    if (st->kind == kInplace) {
      IValue& r = stack->back();
      if (nret == 1 && r.isTensor() && r.toTensor().unsafeGetTensorImpl() == host_self.unsafeGetTensorImpl()) {
        if (host_self.storage().data() != self.storage().data() || host_self.sizes() != self.sizes()) {
          repoint(self, host_self);  // the host resized it: follow
        }
        r = IValue(self);
        return;
      }
    } else if (!returns_allowed(stack, nret)) {  // a result the chip has no format for
      count(-1);
      torch::jit::drop(*stack, nret);
      for (auto& v : saved) stack->push_back(std::move(v));
      return to_python(op, stack);
    }
    for (auto it = stack->end() - nret; it != stack->end(); ++it) {
      if (it->isTensor()) {
        const Tensor& t = it->toTensor();
        if (t.defined() && t.device().is_cpu()) *it = IValue(to_trn(t));
      } else if (it->isTensorList()) {
        auto list = it->toTensorList();
        c10::List<Tensor> out;
        out.reserve(list.size());
        for (const Tensor& t : list) out.push_back(t.defined() && t.device().is_cpu() ? to_trn(t) : t);
        *it = IValue(std::move(out));
      }
    }
  }

  void count(int64_t n) {
    if (g_counting.load(std::memory_order_relaxed)) st->count.fetch_add(n, std::memory_order_relaxed);
  }
};

torch::Library& fast_library() {
  static auto* lib = new torch::Library(torch::Library::IMPL, "aten", DispatchKey::PrivateUse1, __FILE__, __LINE__);
  return *lib;
}

Tensor wrap_op(const Tensor& cpu) { return to_trn(cpu); }
Tensor host_op(const Tensor& t) { return to_host(t); }
int64_t scalar_type_op(const Tensor& t) { return static_cast<int64_t>(t.scalar_type()); }

}  // namespace

TORCH_LIBRARY(trnsim_native, m) {
  m.def("wrap(Tensor cpu) -> Tensor");
  m.def("host(Tensor t) -> Tensor");
  m.def("scalar_type(Tensor t) -> int");
}

// Registered for the autograd keys too: both only rewire metadata and never take part in
// autograd (the Python versions they replace did not either).
TORCH_LIBRARY_IMPL(trnsim_native, CPU, m) {
  m.impl("wrap", &wrap_op);
  m.impl("scalar_type", &scalar_type_op);
}
TORCH_LIBRARY_IMPL(trnsim_native, AutogradCPU, m) { m.impl("wrap", &wrap_op); }
TORCH_LIBRARY_IMPL(trnsim_native, PrivateUse1, m) { m.impl("host", &host_op); }
TORCH_LIBRARY_IMPL(trnsim_native, AutogradPrivateUse1, m) { m.impl("host", &host_op); }
// And for the math-bit keys: their fallback would resolve a lazy conjugate or negative view
// by cloning it, which copies through trnsim's kernels, which ask for the host view again.
// These carry the bits over instead.
TORCH_LIBRARY_IMPL(trnsim_native, Conjugate, m) {
  m.impl("wrap", &wrap_op);
  m.impl("host", &host_op);
}
TORCH_LIBRARY_IMPL(trnsim_native, Negative, m) {
  m.impl("wrap", &wrap_op);
  m.impl("host", &host_op);
}

extern "C" {

// Register the fast kernel for aten op `name` ("add.Tensor"); its index, or -1 (the
// reason in trnsim_fast_error()).
int trnsim_fast_add(const char* name, int kind, int dtype_arg) {
  try {
    auto state = std::make_unique<OpState>();
    state->name = name;
    state->kind = kind;
    state->dtype_arg = dtype_arg;
    OpState* raw = state.get();
    fast_library().impl(name, torch::CppFunction::makeFromBoxedFunctor(std::make_unique<FastKernel>(raw)));
    g_ops.push_back(std::move(state));
    return static_cast<int>(g_ops.size()) - 1;
  } catch (const std::exception& e) {
    g_error = e.what();
    return -1;
  }
}

const char* trnsim_fast_error() { return g_error.c_str(); }

void trnsim_fast_set_python(int index, int python) { g_ops.at(index)->python.store(python != 0); }
void trnsim_fast_set_dtypes(uint64_t mask) { g_dtypes.store(mask); }
void trnsim_fast_set_counting(int on) { g_counting.store(on != 0); }
void trnsim_fast_enable(int on) { g_enabled.store(on != 0); }

// Copy each op's count since the last call into `out` (length `n`) and reset it.
int trnsim_fast_take_counts(int64_t* out, int n) {
  int size = static_cast<int>(g_ops.size());
  for (int i = 0; i < size && i < n; ++i) out[i] = g_ops[i]->count.exchange(0);
  return size;
}

int64_t trnsim_mem_allocated() { std::lock_guard<std::recursive_mutex> l(g_mu); return g_allocated; }
int64_t trnsim_mem_peak() { std::lock_guard<std::recursive_mutex> l(g_mu); return g_peak; }
void trnsim_mem_reset_peak() { std::lock_guard<std::recursive_mutex> l(g_mu); g_peak = g_allocated; }
int64_t trnsim_mem_live() { std::lock_guard<std::recursive_mutex> l(g_mu); return g_live; }
int64_t trnsim_mem_allocations() { std::lock_guard<std::recursive_mutex> l(g_mu); return g_allocations; }

}  // extern "C"
