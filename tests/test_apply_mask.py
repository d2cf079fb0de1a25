"""Applying a token bitmask to logits (xg2ref/apply_mask.py, xg2ref/kernels/apply_bitmask.py):
every backend against one numpy reference on random shapes, dtypes, strides and indices; the
CUDA kernel on numba's simulator, and on a real GPU when there is one; exact error messages."""

import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xg2ref as xgr
from tests.hypothesis_budget import examples

torch = pytest.importorskip("torch")

TORCH_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def reference(values: np.ndarray, bitmask: np.ndarray, rows, vocab_size: int) -> np.ndarray:
    """float64 logits after masking (the rule of the module docstring, by unpacking the bits)."""
    out = values.copy()
    bits = np.unpackbits(np.ascontiguousarray(bitmask, dtype="<i4").view(np.uint8), axis=-1, bitorder="little")
    for r in rows:
        out[r, :vocab_size][bits[r, :vocab_size] == 0] = -np.inf
    return out


@st.composite
def cases(draw):
    batch = draw(st.integers(1, 5))
    width = draw(st.integers(1, 150))
    words = max(draw(st.integers(-1, 2)) + (width + 31) // 32, 1)  # narrower, exact or wider
    bitmask = np.array(draw(st.lists(st.sampled_from([0, -1, 1, 0x55555555, -0x80000000, 12345]) | st.integers(-2**31, 2**31 - 1),
                                     min_size=batch * words, max_size=batch * words)), dtype=np.int32).reshape(batch, words)
    rows = None
    if draw(st.booleans()):
        rows = draw(st.lists(st.integers(0, batch - 1), unique=True, max_size=batch))
    covered = min(width, words * 32)
    vocab_size = draw(st.none() | st.integers(0, covered))
    stride = draw(st.sampled_from(["contiguous", "wide rows", "every other row"]))
    return batch, width, bitmask, rows, vocab_size, stride, draw(st.integers(0, 2**16))


def make_logits(batch, width, stride, seed, dtype: str, kind: str):
    """Random logits as a (possibly strided) view of a larger buffer: (view, buffer, the
    buffer's float64 values, the view's index into the buffer)."""
    rng = np.random.default_rng(seed)
    shape = {"contiguous": (batch, width), "wide rows": (batch, width + 7), "every other row": (2 * batch, width)}[stride]
    base = torch.tensor(rng.normal(size=shape), dtype=TORCH_DTYPES[dtype])
    if kind == "numpy":
        base = base.numpy()  # float32 and float16 only
    where = {"contiguous": np.s_[:, :], "wide rows": np.s_[:, :width], "every other row": np.s_[::2, :]}[stride]
    return base[where], base, to_float64(base).copy(), where


def to_float64(x) -> np.ndarray:
    return x.to(torch.float64).numpy() if isinstance(x, torch.Tensor) else x.astype(np.float64)


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), st.sampled_from([("cpu", "numpy", "float32"), ("cpu", "numpy", "float16"), ("cpu", "torch", "float32"),
                                 ("cpu", "torch", "float16"), ("cpu", "torch", "bfloat16"),
                                 ("torch_native", "torch", "float32"), ("torch_native", "torch", "bfloat16"),
                                 ("auto", "torch", "float16")]))
def test_every_cpu_backend_matches_the_reference(case, backend_kind_dtype):
    batch, width, bitmask, rows, vocab_size, stride, seed = case
    backend, kind, dtype = backend_kind_dtype
    view, base, values, where = make_logits(batch, width, stride, seed, dtype, kind)
    mask = torch.from_numpy(bitmask) if kind == "torch" else bitmask
    n = min(width, bitmask.shape[1] * 32) if vocab_size is None else vocab_size
    want = values.copy()  # the whole buffer: nothing outside the view may change
    want[where] = reference(values[where], bitmask, range(batch) if rows is None else rows, n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a narrow bitmask warns (tested below)
        xgr.apply_token_bitmask_inplace(view, mask, vocab_size=vocab_size, indices=rows, backend=backend)
    assert np.array_equal(to_float64(base), want)


def test_one_dimensional_logits_and_bitmask_are_one_row():
    logits = torch.zeros(40)
    xgr.apply_token_bitmask_inplace(logits, torch.tensor([0b101, 1], dtype=torch.int32))
    assert torch.isinf(logits).nonzero().flatten().tolist() == [1] + list(range(3, 32)) + list(range(33, 40))


def test_a_narrow_bitmask_leaves_the_trailing_logits_with_a_warning():
    logits = torch.zeros(1, 40)
    with pytest.warns(UserWarning, match=r"covers only 32 tokens but logits have 40") as caught:
        xgr.apply_token_bitmask_inplace(logits, torch.zeros(1, 1, dtype=torch.int32))
    assert caught[0].filename == __file__  # it points at the caller
    assert torch.isinf(logits[0, :32]).all() and not torch.isinf(logits[0, 32:]).any()


B = torch.tensor([[1, 0, 0], [2, 0, 0]], dtype=torch.int32)


@pytest.mark.parametrize("call, message", [
    (lambda: xgr.apply_token_bitmask_inplace(torch.zeros(3, 70), B),
     "without indices, logits and bitmask need the same number of rows, got 3 and 2"),
    (lambda: xgr.apply_token_bitmask_inplace(torch.zeros(2, 70), B, indices=[5]),
     "index 5 is out of bounds: indices must be in [0, 2) for 2 logits rows and 2 bitmask rows"),
    (lambda: xgr.apply_token_bitmask_inplace(torch.zeros(2, 70), B, indices=[1, 1]), "indices must be unique"),
    (lambda: xgr.apply_token_bitmask_inplace(torch.zeros(2, 70), B, vocab_size=90),
     "vocab_size 90 is larger than the logits (70 per row) or the bitmask covers (96 tokens per row)"),
    (lambda: xgr.apply_token_bitmask_inplace(torch.zeros(2, 70), B, vocab_size=-1),
     "vocab_size must be a non-negative integer, got -1"),
    (lambda: xgr.apply_token_bitmask_inplace(torch.zeros(2, 70, dtype=torch.float64), B),
     "logits must be of type float32 or bfloat16/float16"),
    (lambda: xgr.apply_token_bitmask_inplace(torch.zeros(2, 70), B.long()), "bitmask must be of type int32"),
    (lambda: xgr.apply_token_bitmask_inplace(torch.zeros(2, 2, 70), B), "logits should be 1D or 2D, but got 3D"),
    (lambda: xgr.apply_token_bitmask_inplace(torch.zeros(2, 70), B[None]), "bitmask should be 1D or 2D, but got 3D"),
    (lambda: xgr.apply_token_bitmask_inplace(torch.zeros(2, 70), B, backend="bogus"),
     'Unknown backend: bogus. The value should be one of them: ["auto", "cpu", "cuda", "torch_native"]'),
    (lambda: xgr.apply_token_bitmask_inplace(torch.zeros(2, 70), B, backend="triton"),
     "backend 'triton' is one of xgrammar's that xg2ref leaves out; use one of auto, cpu, cuda, torch_native"),
    (lambda: xgr.apply_token_bitmask_inplace(torch.zeros(2, 70), B, backend="cuda"),
     "logits must be a torch tensor on a CUDA device for the cuda backend"),
    (lambda: xgr.apply_token_bitmask_inplace(np.zeros((2, 70), np.float32), B, backend="torch_native"),
     "the torch_native backend needs torch tensors"),
    (lambda: xgr.apply_token_bitmask_inplace(torch.zeros(2, 70), B.tolist()),
     "bitmask must be a numpy array or a torch tensor, got list"),
    (lambda: xgr.apply_token_bitmask_inplace(torch.zeros(2, 70).to("meta"), B.to("meta"), backend="cpu"),
     "logits must be on CPU"),
])
def test_bad_input_raises_value_error_with_its_message(call, message):
    with pytest.raises(ValueError) as err:
        call()
    assert str(err.value) == message
    assert isinstance(err.value, RuntimeError)  # as xgrammar's C++ checks raise


def test_nothing_is_written_when_a_check_fails():
    logits = torch.zeros(2, 70)
    with pytest.raises(ValueError):
        xgr.apply_token_bitmask_inplace(logits, B, indices=[0, 7])
    assert not torch.isinf(logits).any()


SIMULATED = textwrap.dedent("""
    import numpy as np
    from xg2ref.kernels.apply_bitmask import NEG_INF_BITS, launch_cuda
    rng = np.random.default_rng(0)
    for batch, width, words, dtype, rows in [(2, 70, 3, "float32", [0, 1]), (3, 40, 2, "float16", [2]),
                                             (1, 33, 2, "bfloat16", [0]), (2, 64, 2, "float32", [])]:
        int_type, bits = NEG_INF_BITS[dtype]
        raw = rng.integers(0, 100, size=(batch, width)).astype(int_type)
        mask = rng.integers(-2**31, 2**31, size=(batch, words)).astype(np.int32)
        want = raw.copy()
        for r in rows:
            for t in range(width):
                if (int(mask[r, t // 32]) >> (t % 32)) & 1 == 0:
                    want[r, t] = bits
        launch_cuda(raw, mask, np.array(rows, dtype=np.int32), width, int_type(bits))
        assert np.array_equal(raw, want), (batch, width, dtype, rows)
    print("simulated kernel ok")
""")


def test_the_cuda_kernel_on_the_simulator():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    done = subprocess.run([sys.executable, "-c", SIMULATED], env=env, capture_output=True, text=True, timeout=600,
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "simulated kernel ok" in done.stdout


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine")
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("indices", [None, [1, 3]])
@pytest.mark.parametrize("backend", ["cuda", "auto", "torch_native"])
def test_the_gpu_backends_on_a_real_gpu(dtype, indices, backend):
    rng = np.random.default_rng(1)
    stream = torch.cuda.Stream()
    for width in (1, 31, 32, 1000, 128256):
        for stride in ("wide rows", "every other row"):
            bitmask = rng.integers(-2**31, 2**31, size=(4, (width + 31) // 32)).astype(np.int32)
            shape = (4, width + 5) if stride == "wide rows" else (8, width)
            where = np.s_[:, :width] if stride == "wide rows" else np.s_[::2, :]
            base = torch.tensor(rng.normal(size=shape), dtype=TORCH_DTYPES[dtype]).cuda()
            values = base.cpu().to(torch.float64).numpy()
            want = values.copy()
            want[where] = reference(values[where], bitmask, range(4) if indices is None else indices, width)
            with torch.cuda.stream(stream):  # a stream of the caller's: the kernel runs on it
                mask = torch.from_numpy(bitmask).cuda()
                xgr.apply_token_bitmask_inplace(base[where], mask, indices=indices, backend=backend)
                got = base.cpu()
            assert np.array_equal(got.to(torch.float64).numpy(), want), (width, stride)
    logits = torch.zeros(40, device="cuda")  # one row
    xgr.apply_token_bitmask_inplace(logits, torch.tensor([0b101, 1], dtype=torch.int32, device="cuda"), backend=backend)
    assert torch.isinf(logits).nonzero().flatten().tolist() == [1] + list(range(3, 32)) + list(range(33, 40))
