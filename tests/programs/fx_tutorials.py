"""The official torch.fx tutorials' code, run unchanged: conv/batch-norm fusion on a traced
model, graph rewriting (replace add with mul, insert after a node), a Transformer swapping ops,
a profiling Interpreter, shape propagation, replace_pattern, fx.wrap and the tracing errors.
Prints graph text, generated code and tables; targets are printed through the graph's own
text, not through Python's repr of the functions (which names memory addresses)."""

import copy
import time
from typing import Any, Dict, List, Tuple

import torch
import torch.fx as fx
import torch.nn as nn
import torch.nn.functional as F
from torch.fx import Interpreter, Transformer, replace_pattern, symbolic_trace
from torch.fx.passes.shape_prop import ShapeProp

torch.manual_seed(0)


def my_custom_function(x, y):
    return x * x + y * y


torch.fx.wrap("my_custom_function")


# ---------------------------------------------------------------- conv/bn fusion tutorial
class WrappedBatchNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.mod = nn.BatchNorm2d(1)

    def forward(self, x):
        return self.mod(x)


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 1, 1)
        self.bn1 = nn.BatchNorm2d(1)
        self.conv2 = nn.Conv2d(1, 1, 1)
        self.nested = nn.Sequential(
            nn.BatchNorm2d(1),
            nn.Conv2d(1, 1, 1),
        )
        self.wrapped = WrappedBatchNorm()

    def forward(self, x):
        x = self.conv1(x)
        x = self.bn1(x)
        x = self.conv2(x)
        x = self.nested(x)
        x = self.wrapped(x)
        return x


model = M()
model.eval()


def fuse_conv_bn_eval(conv, bn):
    assert not (conv.training or bn.training), "Fusion only for eval!"
    fused_conv = copy.deepcopy(conv)
    fused_conv.weight, fused_conv.bias = \
        fuse_conv_bn_weights(fused_conv.weight, fused_conv.bias,
                             bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias)
    return fused_conv


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    if conv_b is None:
        conv_b = torch.zeros_like(bn_rm)
    bn_var_rsqrt = torch.rsqrt(bn_rv + bn_eps)
    conv_w = conv_w * (bn_w * bn_var_rsqrt).reshape([-1] + [1] * (len(conv_w.shape) - 1))
    conv_b = (conv_b - bn_rm) * bn_var_rsqrt * bn_w + bn_b
    return torch.nn.Parameter(conv_w), torch.nn.Parameter(conv_b)


def _parent_name(target: str) -> Tuple[str, str]:
    *parent, name = target.rsplit(".", 1)
    return parent[0] if parent else "", name


def replace_node_module(node: fx.Node, modules: Dict[str, Any], new_module: torch.nn.Module):
    assert isinstance(node.target, str)
    parent_name, name = _parent_name(node.target)
    setattr(modules[parent_name], name, new_module)


def fuse(model: torch.nn.Module) -> torch.nn.Module:
    model = copy.deepcopy(model)
    fx_model: fx.GraphModule = fx.symbolic_trace(model)
    modules = dict(fx_model.named_modules())
    for node in fx_model.graph.nodes:
        if node.op != "call_module":
            continue
        if type(modules[node.target]) is nn.BatchNorm2d and \
                type(modules[node.args[0].target]) is nn.Conv2d:
            if len(node.args[0].users) > 1:
                continue
            conv = modules[node.args[0].target]
            bn = modules[node.target]
            fused_conv = fuse_conv_bn_eval(conv, bn)
            replace_node_module(node.args[0], modules, fused_conv)
            node.replace_all_uses_with(node.args[0])
            fx_model.graph.erase_node(node)
    fx_model.graph.lint()
    fx_model.recompile()
    return fx_model


print(fx.symbolic_trace(model).graph)
fused_model = fuse(model)
print(fused_model.code)
inp = torch.randn(5, 1, 1, 1)
torch.testing.assert_close(fused_model(inp), model(inp))
print("fused matches:", torch.allclose(fused_model(inp), model(inp), atol=1e-6))
print([name for name, _ in fused_model.named_modules()])
print(sorted(fused_model.state_dict()))


# ---------------------------------------------------------------- rewriting graphs
class AddModule(torch.nn.Module):
    def forward(self, x, y):
        return torch.add(x, y) + torch.add(y, 1.0)


def transform(m: nn.Module, tracer_class: type = fx.Tracer) -> torch.nn.Module:
    graph: fx.Graph = tracer_class().trace(m)
    for node in graph.nodes:
        if node.op == "call_function":
            if node.target == torch.add:
                node.target = torch.mul
    graph.lint()
    return fx.GraphModule(m, graph)


x, y = torch.tensor([2.0, 3.0]), torch.tensor([4.0, 5.0])
mul_module = transform(AddModule())
print(mul_module.graph)
print(mul_module(x, y))

traced = symbolic_trace(AddModule())
for node in traced.graph.nodes:
    if node.op == "call_function" and node.target == torch.add:
        with traced.graph.inserting_after(node):
            new_node = traced.graph.call_function(torch.sub, node.args, node.kwargs)
            node.replace_all_uses_with(new_node)
        traced.graph.erase_node(node)
traced.recompile()
print(traced.code)
print(traced(x, y))

traced = symbolic_trace(AddModule())
for node in traced.graph.nodes:
    if node.op == "call_function" and node.target == torch.add:
        with traced.graph.inserting_after(node):
            relu = traced.graph.call_function(torch.relu, (node,))
            node.replace_all_uses_with(relu, delete_user_cb=lambda user, r=relu: user is not r)
traced.recompile()
print(traced.code)
print([n.name for n in traced.graph.nodes], traced(-x, y))
print(traced.graph.eliminate_dead_code())


class NegSigmSwapXformer(Transformer):
    def call_function(self, target, args, kwargs):
        if target == torch.sigmoid:
            return torch.neg(*args, **kwargs)
        return super().call_function(target, args, kwargs)

    def call_method(self, target, args, kwargs):
        if target == "neg":
            call_self, *args_tail = args
            return call_self.sigmoid(*args_tail, **kwargs)
        return super().call_method(target, args, kwargs)


def fn(x):
    return torch.sigmoid(x).neg()


gm = torch.fx.symbolic_trace(fn)
transformed: torch.nn.Module = NegSigmSwapXformer(gm).transform()
input = torch.randn(3, 4)
torch.testing.assert_close(transformed(input), torch.neg(input).sigmoid())
print(transformed.code)


# ---------------------------------------------------------------- profiling interpreter
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4, 10)

    def forward(self, x):
        x = F.relu(self.bn(self.conv(x)))
        x = F.adaptive_avg_pool2d(x, (1, 1))
        x = torch.flatten(x, 1)
        return self.fc(x)


class ProfilingInterpreter(Interpreter):
    def __init__(self, mod: torch.nn.Module):
        gm = torch.fx.symbolic_trace(mod)
        super().__init__(gm)
        self.total_runtime_sec: List[float] = []
        self.runtimes_sec: Dict[torch.fx.Node, List[float]] = {}

    def run(self, *args) -> Any:
        t_start = time.time()
        return_val = super().run(*args)
        t_end = time.time()
        self.total_runtime_sec.append(t_end - t_start)
        return return_val

    def run_node(self, n: torch.fx.Node) -> Any:
        t_start = time.time()
        return_val = super().run_node(n)
        t_end = time.time()
        self.runtimes_sec.setdefault(n, [])
        self.runtimes_sec[n].append(t_end - t_start)
        return return_val

    def summary(self) -> str:
        rows = []
        for node, runtimes in self.runtimes_sec.items():
            rows.append(f"{node.op:<14}{node.name:<24}{len(runtimes)}")
        return "\n".join(rows)


net = Net().eval()
interp = ProfilingInterpreter(net)
batch = torch.randn(2, 3, 5, 5)
with torch.no_grad():
    out = interp.run(batch)
    interp.run(batch)
    torch.testing.assert_close(out, net(batch))
print(interp.summary())
print(len(interp.total_runtime_sec), out.shape)


# ---------------------------------------------------------------- shape propagation
gm = symbolic_trace(net)
ShapeProp(gm).propagate(batch)
for node in gm.graph.nodes:
    meta = node.meta.get("tensor_meta")
    if meta is not None:
        print(node.name, node.op, tuple(meta.shape), meta.dtype, meta.stride,
              meta.requires_grad, node.meta["type"].__name__)
fused_model.graph.print_tabular()
gm.print_readable()
print(gm)


# ---------------------------------------------------------------- replace_pattern
class M2(torch.nn.Module):
    def forward(self, x, w1, w2):
        m1 = torch.cat([w1, w2]).sum()
        m2 = torch.cat([w1, w2]).sum()
        return x + torch.max(m1) + torch.max(m2)


def pattern(w1, w2):
    return torch.cat([w1, w2]).sum()


def replacement(w1, w2):
    return torch.stack([w1, w2])


traced_module = symbolic_trace(M2())
matches = replace_pattern(traced_module, pattern, replacement)
print(len(matches), [m.anchor.name for m in matches])
print(traced_module.code)
w1, w2 = torch.ones(2), torch.full((2,), 2.0)
print(traced_module(torch.zeros(2), w1, w2))


# ---------------------------------------------------------------- wrap, concrete args, errors
def uses_wrapped(a, b):
    return my_custom_function(a, b) + 1


gw = symbolic_trace(uses_wrapped)
print(gw.graph)
print(gw(x, y))


def branchy(x, flag, scale=None):
    if scale is None:
        scale = 2
    return x * scale if flag else x - 1


gc = symbolic_trace(branchy, concrete_args={"flag": True, "scale": None})
print(gc.graph)
print(gc.code)
print(gc(x, True))


def control(x):
    if x.sum() > 0:
        return x
    return -x


def loop(x):
    for _row in x:
        pass
    return x


def length(x):
    return x + len(x)


def unpack(x):
    a, b = x
    return a * b


for f in (control, loop, length):
    try:
        symbolic_trace(f)
    except Exception as e:
        print(type(e).__name__, e)
print(symbolic_trace(unpack).code)


class Attrs(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 2)
        self.register_buffer("offset", torch.ones(2))
        self.scale = torch.tensor(2.0)

    def forward(self, x, *rest):
        h = x @ self.lin.weight.t() + self.lin.bias + self.offset
        h = h * self.scale + torch.ones(2)
        n = x.size(0) + x.shape[1] + x.dim()
        return {"h": h.view(x.size(0), -1).transpose(0, 1)[:, 1:], "t": (x.dtype, -h), "n": n}


ga = symbolic_trace(Attrs())
print(ga.graph)
print(ga.code)
out = ga(torch.ones(2, 3))
print(out["h"].shape, out["t"][0], out["t"][1].shape, out["n"])
print([n for n, _ in ga.named_parameters()], [n for n, _ in ga.named_buffers()])
