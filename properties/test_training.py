"""Training workloads: small models trained for a few steps on the device give CPU's losses, weights and gradients.

Each scenario is one model family built from drawn sizes, with weights from a drawn seed (made on CPU,
then moved, so both sides start equal): `mlp` (Linear, ReLU, Linear), `cnn` (Conv2d, BatchNorm2d,
ReLU, MaxPool2d, Linear), `transformer` (a TransformerEncoderLayer: self-attention through SDPA,
layer norm, feed-forward; then mean over tokens and a Linear head), `rnn` (Embedding, a tanh RNN,
a Linear head on the last step). The program runs `steps` steps of forward, cross-entropy loss,
backward and SGD with momentum, and returns every step's loss, the parameters, the buffers (batch
norm's running statistics) and the last gradients. The oracle is the same program on CPU. The
tolerance is the dtype's with a norm-wise floor, widened by twice the number of steps: training
compounds rounding step by step.

Limits: float32 only; dropout off (random masks differ by device: the rng suites' ground); no
LSTM/GRU (off CPU torch routes them through fused cell kernels a backend may lack: a separate claim);
small sizes (at most a few hundred weights), 1 to 3 steps.
"""

from __future__ import annotations

import torch
from hypothesis import strategies as st

from torchcts.engine.programs import run_program
from torchcts.plan.registry import ScenarioItems, register_property
from torchcts.strategies import Case
from torchcts.strategies.sample_walk import sample_input

DTYPES = ("float32",)
CATEGORIES = ("backward",)  # the manifest's tolerance override the comparison reads (vocabulary.TOLERANCE_READERS)
MODELS = ("mlp", "cnn", "transformer", "rnn")
MAX_STEPS = 3


# -- the program: torch only ------------------------------------------------------------------------------------------

def train_steps(input, target, model, sizes, seed, steps, lr, backend=None):
    """Build `model` ("mlp", "cnn", "transformer" or "rnn") of `sizes` on CPU with weights from `seed`, move it to
    `input`'s device, train `steps` steps (cross-entropy, SGD with momentum 0.9 and learning rate `lr`); returns
    [the losses, the parameters, the buffers, the last gradients]. With `backend`, the model's forward runs through
    torch.compile(backend=backend) (compiled afresh: dynamo's caches are reset first)."""
    nn = torch.nn
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        if model == "mlp":
            features, hidden, classes = sizes
            net = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, classes))
        elif model == "cnn":
            channels, hidden, classes = sizes
            height, width = input.shape[-2:]
            net = nn.Sequential(nn.Conv2d(channels, hidden, 3, padding=1), nn.BatchNorm2d(hidden), nn.ReLU(),
                                nn.MaxPool2d(2), nn.Flatten(), nn.Linear(hidden * (height // 2) * (width // 2), classes))
        elif model == "transformer":  # an encoder layer, the mean over tokens, a linear classifier
            width, heads, hidden, classes = sizes
            net = nn.ModuleList([nn.TransformerEncoderLayer(width, heads, dim_feedforward=hidden, dropout=0.0,
                                                            batch_first=True), nn.Linear(width, classes)])
        else:  # embedding, a tanh RNN, a linear classifier on the last step
            vocabulary, width, hidden, classes = sizes
            net = nn.ModuleList([nn.Embedding(vocabulary, width), nn.RNN(width, hidden, batch_first=True),
                                 nn.Linear(hidden, classes)])
    net = net.to(input.device)

    def forward(x):
        if model == "transformer":
            return net[1](net[0](x).mean(dim=1))
        if model == "rnn":
            return net[2](net[1](net[0](x))[0][:, -1])
        return net(x)

    if backend is not None:
        torch._dynamo.reset()
        forward = torch.compile(forward, backend=backend)
    optimizer = torch.optim.SGD(net.parameters(), lr=lr, momentum=0.9)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(forward(input), target)
        loss.backward()
        optimizer.step()
        losses.append(loss.detach())
    return [losses, [p.detach() for p in net.parameters()], [b.detach() for b in net.buffers()],
            [p.grad for p in net.parameters()]]


PROGRAMS = {model: train_steps for model in MODELS}


# -- cases ------------------------------------------------------------------------------------------------------------

def _size(draw, label: str, low: int, high: int) -> int:
    return draw(st.integers(low, high), label=label)


def _values(draw, shape: tuple[int, ...], label: str) -> torch.Tensor:
    seed = draw(st.integers(0, 2**16 - 1), label=f"seed of {label}")
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


def training_cases(model: str) -> st.SearchStrategy[Case]:
    @st.composite
    def draw_case(draw) -> Case:
        batch, classes = _size(draw, "batch", 1, 4), _size(draw, "classes", 2, 4)
        if model == "mlp":
            sizes = [_size(draw, "features", 1, 8), _size(draw, "hidden", 1, 8), classes]
            input = _values(draw, (batch, sizes[0]), "input")
        elif model == "cnn":
            sizes = [_size(draw, "channels", 1, 3), _size(draw, "hidden channels", 1, 4), classes]
            spatial = (_size(draw, "height", 2, 6), _size(draw, "width", 2, 6))
            input = _values(draw, (batch, sizes[0], *spatial), "input")
        elif model == "transformer":
            heads = _size(draw, "heads", 1, 2)
            sizes = [heads * _size(draw, "head width", 1, 4), heads, _size(draw, "feed-forward width", 1, 8), classes]
            input = _values(draw, (batch, _size(draw, "tokens", 1, 4), sizes[0]), "input")
        else:
            vocabulary = _size(draw, "vocabulary", 2, 10)
            sizes = [vocabulary, _size(draw, "embedding width", 1, 6), _size(draw, "hidden", 1, 6), classes]
            seed = draw(st.integers(0, 2**16 - 1), label="seed of tokens")
            input = torch.randint(0, vocabulary, (batch, _size(draw, "steps of the sequence", 1, 5)),
                                  generator=torch.Generator().manual_seed(seed))
        seed = draw(st.integers(0, 2**16 - 1), label="seed of targets")
        target = torch.randint(0, classes, (batch,), generator=torch.Generator().manual_seed(seed))
        steps = _size(draw, "steps", 1, MAX_STEPS)
        lr = draw(st.sampled_from([0.01, 0.1]), label="lr")
        weights = draw(st.integers(0, 2**16 - 1), label="seed of the weights")
        sample = sample_input(input, args=(target, model, sizes, weights, steps, lr))
        what = f"{model}{sizes} on {list(input.shape)}, {steps} steps, lr={lr}"
        return Case(model, "scenario", torch.float32, sample, 0, transforms=(what,))

    return draw_case()


def training_check(cts, model: str):
    """The device's losses, parameters, buffers and gradients equal CPU's after the same steps."""
    run = run_program(train_steps)

    def check(case):
        expected = cts.on_cpu_call(run, case.sample)
        actual = cts.on_device_call(run, case.sample, what=f" ({case.transforms[0]})")
        steps = case.sample.args[4]
        cts.assert_matches(actual, expected, what=case.transforms[0], widen=2.0 * steps, inputs=case.sample,
                           normwise=True, categories=CATEGORIES)

    return check


@register_property("training", capability="training", level=3,
                   items=ScenarioItems(MODELS, DTYPES, programs=PROGRAMS))
def test_training(cts):
    cts.run(training_cases(cts.item.op), training_check(cts, cts.item.op))
