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

from torchcts.cases.bounds import CaseParams, Ints, OneOf, Tensors, Tuples
from torchcts.cases.scenario_case import scenario_case
from torchcts.properties.scenario_table import Scenario, Tolerance, scenario_suite
from torchcts.strategies import Case

# docs/properties.md's row of this suite (scripts/generate_registry_listings.py writes the table)
PROVES = ("small models (MLP, CNN with batch norm, transformer layer, embedding + RNN) trained for 1-3 steps give "
          "CPU's losses, weights, buffers and gradients")

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

BATCH, CLASSES, STEPS, SEED = Ints(1, 4), Ints(2, 4), Ints(1, MAX_STEPS), Ints(0, 2**16 - 1)
RATES = (0.01, 0.1)
FEATURES, HIDDEN = Ints(1, 8), Ints(1, 8)  # mlp
CHANNELS, HIDDEN_CHANNELS, SPATIAL = Ints(1, 3), Ints(1, 4), Ints(2, 6)  # cnn: [batch, channels, height, width]
HEADS, HEAD_WIDTH, FEED_FORWARD, TOKENS = Ints(1, 2), Ints(1, 4), Ints(1, 8), Ints(1, 4)  # transformer
VOCABULARY, EMBEDDING, RNN_HIDDEN, SEQUENCE = Ints(2, 10), Ints(1, 6), Ints(1, 6), Ints(1, 5)  # rnn
SIZES = {"mlp": Tuples((FEATURES, HIDDEN, CLASSES)), "cnn": Tuples((CHANNELS, HIDDEN_CHANNELS, CLASSES)),
         "transformer": Tuples((Ints(HEADS.low * HEAD_WIDTH.low, HEADS.high * HEAD_WIDTH.high), HEADS, FEED_FORWARD,
                                CLASSES)),
         "rnn": Tuples((VOCABULARY, EMBEDDING, RNN_HIDDEN, CLASSES))}


def _within(shape, *bounds) -> bool:
    return len(shape) == len(bounds) and all(bound.problem(size) is None for size, bound in zip(shape, bounds))


def _fits(model: str, p) -> bool:
    """The input's shape is one the model's sizes take (and the draws make); the targets are `batch` classes."""
    input, target, sizes = p["input"], p["target"], p["sizes"]
    shape, batch = tuple(input.shape), input.shape[0] if input.dim() else 0
    if model == "mlp":
        fits = _within(shape, BATCH, Ints(sizes[0], sizes[0]))
    elif model == "cnn":
        fits = _within(shape, BATCH, Ints(sizes[0], sizes[0]), SPATIAL, SPATIAL)
    elif model == "transformer":
        width, heads = sizes[0], sizes[1]
        fits = width % heads == 0 and width // heads <= HEAD_WIDTH.high and _within(shape, BATCH, TOKENS,
                                                                                      Ints(width, width))
    else:
        fits = (_within(shape, BATCH, SEQUENCE) and not input.is_floating_point()
                and 0 <= int(input.min()) and int(input.max()) < sizes[0])  # token ids below the vocabulary
    return (fits and tuple(target.shape) == (batch,) and not target.is_floating_point()
            and 0 <= int(target.min()) and int(target.max()) < sizes[-1])


def _params(model: str) -> CaseParams:
    """input: the model's input; args: the targets, the model, its sizes, the weights' seed, steps, the rate."""
    most = {"mlp": BATCH.high * FEATURES.high, "cnn": BATCH.high * CHANNELS.high * SPATIAL.high ** 2,
            "transformer": BATCH.high * TOKENS.high * HEADS.high * HEAD_WIDTH.high,
            "rnn": BATCH.high * SEQUENCE.high}[model]
    dims = {"mlp": 2, "cnn": 4, "transformer": 3, "rnn": 2}[model]
    return CaseParams({"target": Tensors(max_elements=BATCH.high, max_dims=1), "model": OneOf((model,)),
                       "sizes": SIZES[model], "seed": SEED, "steps": STEPS, "lr": OneOf(RATES)},
                      input=Tensors(max_elements=most, max_dims=dims),
                      rules=((f"the input's shape fits {model}'s sizes; targets: one class id per batch row",
                              lambda p: _fits(model, p)),))


PARAMS = {model: _params(model) for model in MODELS}  # what each scenario's cases store (`cases.bounds`)


def _size(draw, label: str, bound: Ints) -> int:
    return draw(bound.strategy(), label=label)


def _values(draw, shape: tuple[int, ...], label: str) -> torch.Tensor:
    seed = draw(SEED.strategy(), label=f"seed of {label}")
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


def training_cases(model: str) -> st.SearchStrategy[Case]:
    @st.composite
    def draw_case(draw) -> Case:
        batch, classes = _size(draw, "batch", BATCH), _size(draw, "classes", CLASSES)
        if model == "mlp":
            sizes = [_size(draw, "features", FEATURES), _size(draw, "hidden", HIDDEN), classes]
            input = _values(draw, (batch, sizes[0]), "input")
        elif model == "cnn":
            sizes = [_size(draw, "channels", CHANNELS), _size(draw, "hidden channels", HIDDEN_CHANNELS), classes]
            spatial = (_size(draw, "height", SPATIAL), _size(draw, "width", SPATIAL))
            input = _values(draw, (batch, sizes[0], *spatial), "input")
        elif model == "transformer":
            heads = _size(draw, "heads", HEADS)
            sizes = [heads * _size(draw, "head width", HEAD_WIDTH), heads, _size(draw, "feed-forward width",
                                                                                  FEED_FORWARD), classes]
            input = _values(draw, (batch, _size(draw, "tokens", TOKENS), sizes[0]), "input")
        else:
            vocabulary = _size(draw, "vocabulary", VOCABULARY)
            sizes = [vocabulary, _size(draw, "embedding width", EMBEDDING), _size(draw, "hidden", RNN_HIDDEN), classes]
            seed = draw(SEED.strategy(), label="seed of tokens")
            input = torch.randint(0, vocabulary, (batch, _size(draw, "steps of the sequence", SEQUENCE)),
                                  generator=torch.Generator().manual_seed(seed))
        seed = draw(SEED.strategy(), label="seed of targets")
        target = torch.randint(0, classes, (batch,), generator=torch.Generator().manual_seed(seed))
        steps = _size(draw, "steps", STEPS)
        lr = draw(st.sampled_from(list(RATES)), label="lr")
        weights = draw(SEED.strategy(), label="seed of the weights")
        what = f"{model}{sizes} on {list(input.shape)}, {steps} steps, lr={lr}"
        return scenario_case(model, torch.float32, PARAMS[model], {
            "input": input, "target": target, "model": model, "sizes": sizes, "seed": weights, "steps": steps,
            "lr": lr}, what)

    return draw_case()


# The device's losses, parameters, buffers and gradients equal CPU's after the same steps: the backward tolerance,
# norm-wise, widened twice per step (each step's rounding feeds the next).
COMPARISON = Tolerance(categories=CATEGORIES, normwise=True, widen=lambda values: 2.0 * values["steps"])

test_training = scenario_suite(
    "training", capability="training", level=3, dtypes=DTYPES,
    scenarios=[Scenario(model, PARAMS[model], train_steps, COMPARISON, cases=lambda cts: training_cases(cts.item.op))
               for model in MODELS])
