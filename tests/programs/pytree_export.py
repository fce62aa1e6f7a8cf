"""Libraries' use of torch.utils._pytree (mapping over nested batches, custom containers,
structures as text) and torch.export of a small CNN: the exported program's signature, node
names, state, the unlifted module's outputs and its shape guard."""

from collections import OrderedDict, namedtuple

import torch
import torch.export
import torch.nn as nn
import torch.nn.functional as F
import torch.utils._pytree as pytree

torch.manual_seed(0)

# ---------------------------------------------------------------- pytrees
Batch = namedtuple("Batch", "inputs labels")
batch = {"a": Batch(torch.ones(2, 3), torch.tensor([0, 1])),
         "meta": OrderedDict(ids=[1, 2], name="b0", mask=None)}
leaves, spec = pytree.tree_flatten(batch)
print(len(leaves), [type(x).__name__ for x in leaves])
print(spec)
print(spec.num_leaves, spec.num_nodes, spec == pytree.tree_structure(batch))
moved = pytree.tree_map_only(torch.Tensor, lambda t: t.double() * 2, batch)
print(moved["a"].inputs.dtype, moved["a"].labels, moved["meta"]["ids"])
print(pytree.tree_map(lambda a, b: a + b, [1, (2, 3)], [10, (20, 30)]))
print(pytree.tree_all(lambda x: x is not None, [1, 2]), pytree.tree_any(lambda x: x is None,
                                                                         batch))
for path, leaf in pytree.tree_flatten_with_path({"x": [torch.zeros(1), 5]})[0]:
    print(pytree.keystr(path), type(leaf).__name__)


class Pair:
    def __init__(self, first, second):
        self.first, self.second = first, second


pytree.register_pytree_node(
    Pair, lambda p: ([p.first, p.second], None), lambda xs, _: Pair(*xs),
    serialized_type_name="programs.Pair")
p = pytree.tree_map(lambda t: t + 1, Pair(torch.zeros(2), [torch.ones(1)]))
print(p.first, p.second)
print(pytree.treespec_dumps(pytree.tree_structure((1, [2, {"k": 3}]))))
print(pytree.treespec_loads(pytree.treespec_dumps(pytree.tree_structure(Pair(1, 2)))))
try:
    pytree.tree_map(lambda a, b: a, (1, 2), (1, 2, 3))
except ValueError as e:
    print("ValueError:", e)


# ---------------------------------------------------------------- export
class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4 * 4 * 4, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        x = torch.flatten(x, 1)
        return F.log_softmax(self.fc(x), dim=1)


model = SmallCNN().eval()
example = torch.randn(2, 1, 8, 8)
ep = torch.export.export(model, (example,))
sig = ep.graph_signature
for s in sig.input_specs:
    print(s.kind.name, s.arg.name, s.target, s.persistent)
print([s.arg.name for s in sig.output_specs])
print(sig)
print(sorted(ep.state_dict))
print([n.name for n in ep.graph.nodes])
mod = ep.module()
out = mod(example)
print(out.shape, torch.allclose(out, model(example), atol=1e-6))
print(out.exp().sum(1))
try:
    mod(torch.randn(3, 1, 8, 8))
except AssertionError as e:
    print("AssertionError:", e)
