"""The faulty device behaves like a real device: metadata, views, mutation, copies, factories, autograd.

(When it registers, and only then: tests/testing/test_faulty_opt_in.py.)
"""

from __future__ import annotations

import subprocess
import sys

import torch
from hypothesis import given, settings
import pytest

from torchcts.strategies import place, relayouts, same_bits, tensors
from torchcts.testing import faulty


@settings(max_examples=60)
@given(tensors(torch.float32, max_dims=4))
def test_device_tensors_report_the_exact_layout_of_their_data(t):
    moved = place(t, "faulty").value
    assert isinstance(moved, faulty.FaultyTensor)
    assert (moved.shape, moved.stride(), moved.storage_offset(), moved.dtype) == \
        (t.shape, t.stride(), t.storage_offset(), t.dtype)
    assert same_bits(moved.cpu(), t, nan_payloads=True)


def test_views_alias_and_writes_through_a_view_reach_the_base():
    base = torch.zeros(3, 4, device="faulty")
    view = base.t()[1:]
    assert view.stride() == (1, 4) and view.storage_offset() == 1
    view.fill_(7.0)
    assert base.cpu()[:, 1:].eq(7.0).all() and base.cpu()[:, 0].eq(0.0).all()


def test_inplace_and_out_variants_mutate_and_return_their_tensor():
    x = torch.ones(3, device="faulty")
    assert x.add_(1) is x
    assert x.cpu().tolist() == [2.0, 2.0, 2.0]
    out = torch.empty(0, device="faulty")
    returned = torch.mul(x, 3, out=out)
    assert returned is out
    assert out.shape == (3,) and out.stride() == (1,)  # a resizing out= refreshes the metadata
    assert out.cpu().tolist() == [6.0, 6.0, 6.0]


def test_copies_across_devices_and_dtypes():
    cpu = torch.arange(6.0).reshape(2, 3)
    on_device = cpu.to("faulty")
    assert on_device.device.type == "faulty" and type(on_device.cpu()) is torch.Tensor
    as_double = torch.empty(2, 3, dtype=torch.float64, device="faulty").copy_(on_device)
    assert as_double.dtype == torch.float64 and torch.equal(as_double.cpu(), cpu.double())
    back = torch.zeros(2, 3).copy_(on_device.t().t())
    assert torch.equal(back, cpu)
    assert torch.equal(on_device.to(torch.int32).cpu(), cpu.int())
    assert torch.tensor([1.5, 2.5], device="faulty").cpu().tolist() == [1.5, 2.5]


def test_factories_create_on_the_device():
    for made in (torch.ones(2, 3, device="faulty"), torch.zeros(2, device="faulty"),
                 torch.arange(5, device="faulty"), torch.full((2,), 3.0, device="faulty"),
                 torch.empty_strided((2, 3), (1, 2), device="faulty")):
        assert made.device.type == "faulty"
    assert torch.empty_strided((2, 3), (1, 2), device="faulty").stride() == (1, 2)


def test_random_ops_follow_the_seed():
    torch.manual_seed(5)
    on_device = torch.randn(4, device="faulty").cpu()
    torch.manual_seed(5)
    assert torch.equal(on_device, torch.randn(4))
    assert torch.faulty.device_count() == 2 and torch.faulty.get_rng_state().numel() > 0  # TORCHCTS_FAULTY_DEVICES


def test_autograd_matches_cpu():
    cpu = torch.randn(3, 4, requires_grad=True)
    dev = cpu.detach().to("faulty").requires_grad_()
    (cpu.sin() * cpu).sum().backward()
    (dev.sin() * dev).sum().backward()
    assert dev.grad.device.type == "faulty"
    torch.testing.assert_close(dev.grad.cpu(), cpu.grad, rtol=0, atol=0)


def test_conjugate_and_negative_views_resolve_like_cpu():
    z = torch.tensor([1 + 2j, -3 - 4j])
    on_device = z.to("faulty")
    assert on_device.conj().is_conj()
    assert torch.equal(on_device.conj().resolve_conj().cpu(), z.conj())
    assert torch.equal(torch.fft.hfft(on_device).cpu(), torch.fft.hfft(z))


def test_sparse_tensors_move_and_compute():
    dense = torch.tensor([[0.0, 2.0], [3.0, 0.0]])
    coo = dense.to_sparse().to("faulty")
    assert coo.layout == torch.sparse_coo and coo.device.type == "faulty"
    assert torch.equal(coo.to_dense().cpu(), dense)
    csr = dense.to_sparse_csr().to("faulty")
    assert csr.layout == torch.sparse_csr and torch.equal(csr.to_dense().cpu(), dense)


def _prints_ok_in_a_child(program: str) -> None:
    """Run `program` in a fresh interpreter (a regression there may be a crash) and expect it to print ok."""
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-2000:]


@pytest.mark.slow
def test_kernels_that_read_requires_grad_see_the_device_tensors_flag():
    """sparse.mm's amax/amin kernel keeps the argmax its backward reads only for inputs that require grad; the
    device's CPU data never does, so the device mirrors the flag (else the backward indexed an empty tensor and
    the process died). Run in a child: a regression is a crash."""
    program = (
        "import torch, torchcts.testing.faulty\n"
        "grads = []\n"
        "for device in ('cpu', 'faulty'):\n"
        "    a = torch.tensor([[0.0, 2.0, 0.5], [3.0, 0.0, -1.0]], dtype=torch.float64).to_sparse_csr().to(device)\n"
        "    b = torch.arange(6, dtype=torch.float64).reshape(3, 2).to(device).requires_grad_()\n"
        "    torch.sparse.mm(a.requires_grad_(), b, 'amax').sum().backward()\n"
        "    grads.append(b.grad.cpu())\n"
        "assert torch.equal(grads[0], grads[1]), grads\n"
        "print('ok')\n"
    )
    _prints_ok_in_a_child(program)


@pytest.mark.slow
def test_autograds_zero_gradients_are_dense_zeros_on_the_device():
    """sgn's gradient is autograd's storage-less ZeroTensor on CPU; the device makes dense zeros (the device's
    kernels run below the ZeroTensor key, and reading it as data crashed the process). Run in a child."""
    program = (
        "import torch, torchcts.testing.faulty\n"
        "x = torch.tensor([1.5, -2.0, 0.0], dtype=torch.float64).to('faulty').requires_grad_()\n"
        "(grad,) = torch.autograd.grad(torch.sgn(x), x, torch.ones(3, dtype=torch.float64).to('faulty'))\n"
        "assert grad.device.type == 'faulty' and bool(grad.eq(0).all()) and grad.cpu().tolist() == [0.0] * 3\n"
        "print('ok')\n"
    )
    _prints_ok_in_a_child(program)


def test_printing_looks_like_a_device_tensor():
    assert repr(torch.ones(2, device="faulty")) == "tensor([1., 1.], device='faulty:0')"
    assert "requires_grad=True" in repr(torch.ones(2, device="faulty", requires_grad=True))
