"""The "Introduction to TorchScript" tutorial: MyCell with MyDecisionGate, torch.jit.trace of a
module (and what tracing does to data-dependent control flow), torch.jit.script of the gate and
of a module mixing scripted and traced submodules, @torch.jit.ignore / @torch.jit.export,
scripted functions with loops, and a save / load round trip through a buffer."""
import io

import torch

torch.manual_seed(0)


class MyDecisionGate(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x
        else:
            return -x


class MyCell(torch.nn.Module):
    def __init__(self, dg):
        super(MyCell, self).__init__()  # noqa: UP008  (as the tutorial)
        self.dg = dg
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x, h):
        new_h = torch.tanh(self.dg(self.linear(x)) + h)
        return new_h, new_h


my_cell = MyCell(MyDecisionGate())
x, h = torch.rand(3, 4), torch.rand(3, 4)
print(my_cell)
out, _ = my_cell(x, h)
print("eager", [round(v, 5) for v in out[0].tolist()])


class MyCellTraced(torch.nn.Module):
    def __init__(self):
        super(MyCellTraced, self).__init__()  # noqa: UP008  (as the tutorial)
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x, h):
        new_h = torch.tanh(self.linear(x) + h)
        return new_h, new_h


plain = MyCellTraced()
traced_cell = torch.jit.trace(plain, (x, h))
print(traced_cell)
print(type(traced_cell).__name__)
a, b = traced_cell(x, h)
print("traced == eager", torch.allclose(a, plain(x, h)[0]), a is b)
print("traced on new input", torch.allclose(traced_cell(x * 2, h)[0], plain(x * 2, h)[0]))

# tracing records the branch taken for the example input only
gate = MyDecisionGate()
pos = torch.ones(2, 2)
traced_gate = torch.jit.trace(gate, (pos,))
print("traced gate on negative input", traced_gate(-pos).tolist(), "eager", gate(-pos).tolist())

scripted_gate = torch.jit.script(MyDecisionGate())
print("scripted gate on negative input", scripted_gate(-pos).tolist())


class MyCellScripted(torch.nn.Module):
    def __init__(self, dg):
        super(MyCellScripted, self).__init__()  # noqa: UP008  (as the tutorial)
        self.dg = dg
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x, h):
        new_h = torch.tanh(self.dg(self.linear(x)) + h)
        return new_h, new_h


scripted_cell = torch.jit.script(MyCellScripted(scripted_gate))
print(scripted_cell)
print("scripted cell", tuple(scripted_cell(x, h)[0].shape))


class MyRNNLoop(torch.nn.Module):
    def __init__(self):
        super(MyRNNLoop, self).__init__()  # noqa: UP008  (as the tutorial)
        self.cell = torch.jit.trace(MyCellScripted(scripted_gate), (x, h))

    def forward(self, xs):
        h, y = torch.zeros(3, 4), torch.zeros(3, 4)
        for i in range(xs.size(0)):
            y, h = self.cell(xs[i], h)
        return y, h


rnn_loop = torch.jit.script(MyRNNLoop())
print(rnn_loop)
xs = torch.rand(6, 3, 4)
y, hN = rnn_loop(xs)
print("rnn loop", tuple(y.shape), round(hN.sum().item(), 5))


class WrapRNN(torch.nn.Module):
    def __init__(self):
        super(WrapRNN, self).__init__()  # noqa: UP008  (as the tutorial)
        self.loop = torch.jit.script(MyRNNLoop())

    def forward(self, xs):
        y, h = self.loop(xs)
        return torch.relu(y)


traced = torch.jit.trace(WrapRNN(), (xs,))
print(traced)
print("wrapped", round(traced(xs).sum().item(), 5))


@torch.jit.script
def running_max(x: torch.Tensor, n: int) -> torch.Tensor:
    best = x[0]
    for i in range(1, n):
        best = torch.maximum(best, x[i])
    return best


print("script fn", running_max(torch.tensor([1.0, 5.0, 2.0, 7.0]), 3).item())


class WithHelpers(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.tensor(2.0))

    @torch.jit.ignore
    def debug_stats(self, x: torch.Tensor) -> float:
        return float(x.abs().mean())

    @torch.jit.export
    def double(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2

    def forward(self, x):
        return self.double(x) * self.scale


helper = torch.jit.script(WithHelpers())
v = torch.tensor([1.0, -2.0])
print("export", helper.double(v).tolist(), "forward", helper(v).tolist(),
      "ignore", helper.debug_stats(v))
helper(v).sum().backward()
print("grad through scripted", helper.scale.grad.item())

# save and load through an in-memory file
buf = io.BytesIO()
torch.jit.save(traced_cell, buf)
buf.seek(0)
loaded = torch.jit.load(buf)
print("loaded == traced", torch.allclose(loaded(x, h)[0], traced_cell(x, h)[0]))
print("loaded state", sorted(loaded.state_dict().keys()))
buf = io.BytesIO()
torch.jit.save(scripted_gate, buf)
buf.seek(0)
print("loaded gate", torch.jit.load(buf)(-pos).tolist())

# tracing a recurrent model for deployment, then running it on a longer sequence
rnn = torch.nn.LSTM(4, 3, num_layers=2)
traced_rnn = torch.jit.trace(rnn, (torch.rand(5, 1, 4),))
long_seq = torch.rand(9, 1, 4)
out_t, (h_t, c_t) = traced_rnn(long_seq)
out_e, (h_e, c_e) = rnn(long_seq)
print("traced LSTM", tuple(out_t.shape), torch.allclose(out_t, out_e, atol=1e-6),
      torch.allclose(c_t, c_e, atol=1e-6))
