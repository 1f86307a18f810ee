"""mytorch.nn's module system against real torch.nn (the oracle).

Models are written once as ``build(lib)`` and instantiated with ``lib = mytorch`` and ``lib = torch``;
names, order, shapes, reprs, error classes/messages and numbers must agree.
"""
from __future__ import annotations

import copy
import math
import warnings
from collections import OrderedDict

import numpy as np
import pytest
from oracle import as_numpy, assert_same

import mytorch
from bookkit.torch_bridge import copy_weights, load_numpy_state_dict, state_dict_to_numpy
from mytorch.nn.modules.utils import _pair, _quadruple, _single, _triple

torch = pytest.importorskip("torch")

LIBS = [mytorch, torch]


def both(build):
    """``build(lib)`` for mytorch and torch, with the torch weights copied into mytorch."""
    m, t = build(mytorch), build(torch)
    copy_weights(t, m)
    return m, t


def norm(msg: str) -> str:
    """Error texts name classes by module path: mytorch.nn... vs torch.nn..."""
    return msg.replace("mytorch.", "torch.")


def same_error(fn):
    """``fn(lib)`` raises the same exception class with the same message on both libraries."""
    errs = []
    for lib in LIBS:
        with pytest.raises(Exception) as info:
            fn(lib)
        errs.append(info.value)
    mine, ref = errs
    assert type(mine) is type(ref), f"{type(mine).__name__} vs torch's {type(ref).__name__}: {ref}"
    assert norm(str(mine)) == str(ref)


# ---------------------------------------------------------------------------------- models
def mlp(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))


def net(lib):
    nn = lib.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 3)
            self.scale = nn.Parameter(lib.ones(1))
            self.register_parameter("offset", None)
            self.register_buffer("steps", lib.zeros((), dtype=lib.int64))
            self.register_buffer("cache", lib.zeros(2), persistent=False)
            self.plain = lib.ones(3)  # a plain tensor: not registered
            self.blocks = nn.ModuleList([nn.Linear(3, 3), nn.Tanh()])
            self.heads = nn.ModuleDict({"b": nn.Linear(3, 2), "a": nn.Linear(3, 1)})
            self.extra = nn.ParameterList([nn.Parameter(lib.zeros(2, 2))])

        def forward(self, x):
            x = self.fc(x) * self.scale
            for b in self.blocks:
                x = b(x)
            return self.heads["b"](x)

    return Net()


def shared(lib):
    nn = lib.nn
    lin = nn.Linear(2, 2)
    return nn.Sequential(lin, nn.ReLU(), lin, nn.Sequential(lin))


def deep(lib):
    nn = lib.nn

    class Block(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.lin = nn.Linear(n, n)
            self.act = nn.ReLU(inplace=True)

        def forward(self, x):
            return self.act(self.lin(x)) + x

    class Deep(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(OrderedDict(flat=nn.Flatten(), proj=nn.Linear(6, 4)))
            self.body = nn.ModuleList([Block(4) for _ in range(3)])
            self.head = nn.Linear(4, 2, bias=False)
            self.unflat = nn.Unflatten(1, (1, 2))
            self.skip = nn.Identity(54, unused="x")

        def forward(self, x):
            x = self.stem(x)
            for b in self.body:
                x = b(x)
            return self.unflat(self.skip(self.head(x)))

    return Deep()


MODELS = {"mlp": mlp, "net": net, "shared": shared, "deep": deep}


# ---------------------------------------------------------------------------------- Parameter
def test_parameter_basics():
    p = mytorch.nn.Parameter(mytorch.tensor([1.0, 2.0]))
    q = torch.nn.Parameter(torch.tensor([1.0, 2.0]))
    assert repr(p) == repr(q) and repr(p).startswith("Parameter containing:\n")
    assert isinstance(p, mytorch.Tensor) and p.requires_grad and p.is_leaf
    assert not mytorch.nn.Parameter(mytorch.ones(2), requires_grad=False).requires_grad
    assert tuple(mytorch.nn.Parameter().shape) == tuple(torch.nn.Parameter().shape) == (0,)
    assert type(p * 2) is mytorch.Tensor  # ops return plain tensors
    data = mytorch.zeros(3)
    mytorch.nn.Parameter(data).data.add_(1)
    assert data.tolist() == [1.0, 1.0, 1.0]  # shares memory with its data
    c = copy.deepcopy(p)
    assert type(c) is mytorch.nn.Parameter and c is not p and c.tolist() == p.tolist()


def test_parameter_int_dtype_error():
    same_error(lambda lib: lib.nn.Parameter(lib.ones(2, dtype=lib.int64)))


# ---------------------------------------------------------------------------------- registration
def test_plain_tensor_is_not_registered():
    m, t = net(mytorch), net(torch)
    assert "plain" not in dict(m.named_parameters()) and "plain" not in m.state_dict()
    assert list(m._parameters) == list(t._parameters) == ["scale", "offset"]
    assert m.offset is None and "offset" not in m.state_dict()
    assert list(m._buffers) == list(t._buffers) == ["steps", "cache"]
    assert list(m._modules) == list(t._modules)


@pytest.mark.parametrize("name", list(MODELS))
def test_names_and_order_match_torch(name):
    m, t = MODELS[name](mytorch), MODELS[name](torch)
    for method, kwargs in [("named_parameters", {}), ("named_parameters", {"prefix": "model"}),
                           ("named_parameters", {"recurse": False}),
                           ("named_parameters", {"remove_duplicate": False}),
                           ("named_buffers", {}), ("named_buffers", {"remove_duplicate": False})]:
        mine = [(k, tuple(v.shape)) for k, v in getattr(m, method)(**kwargs)]
        ref = [(k, tuple(v.shape)) for k, v in getattr(t, method)(**kwargs)]
        assert mine == ref, (method, kwargs)
    for kwargs in [{}, {"prefix": "root"}, {"remove_duplicate": False}]:
        mine = [(k, type(v).__name__) for k, v in m.named_modules(**kwargs)]
        assert mine == [(k, type(v).__name__) for k, v in t.named_modules(**kwargs)], kwargs
    assert [k for k, _ in m.named_children()] == [k for k, _ in t.named_children()]
    assert len(list(m.parameters())) == len(list(t.parameters()))
    assert len(list(m.modules())) == len(list(t.modules()))
    assert len(list(m.children())) == len(list(t.children()))
    assert len(list(m.buffers())) == len(list(t.buffers()))


def test_reassigning_moves_between_registries():
    for lib in LIBS:
        m = lib.nn.Module()
        m.x = lib.ones(1)                  # a plain attribute...
        m.x = lib.nn.Parameter(lib.ones(1))  # ...becomes a parameter: removed from __dict__
        assert "x" not in m.__dict__ and "x" in m._parameters
        with pytest.raises(TypeError):
            m.x = lib.nn.Linear(1, 1)      # a parameter's name only takes Parameter or None
        m.x = None
        del m.x
        m.x = lib.nn.Linear(1, 1)
        assert "x" not in m._parameters and "x" in m._modules
        m.x = None                           # a registered module may be set to None
        assert m._modules["x"] is None
        m.register_buffer("b", lib.ones(1))
        m.b = lib.zeros(2)                   # a tensor assigned to a buffer name stays a buffer
        assert m._buffers["b"].shape == (2,)
        del m.b
        assert "b" not in m._buffers


@pytest.mark.parametrize("case", [
    "assign_tensor_to_param", "assign_int_to_module", "buffer_exists", "param_dot", "param_empty",
    "param_type", "buffer_type", "add_module_type", "add_module_dot", "before_init_param",
    "before_init_module", "missing_attr", "nonleaf_param", "assign_str_to_buffer",
    "get_submodule", "get_submodule_not_module", "get_parameter", "train_mode", "to_int",
    "forward_missing", "init_kwargs",
])
def test_registration_errors_match_torch(case):
    def run(lib):
        nn = lib.nn
        m = nn.Module()
        m.w = nn.Parameter(lib.ones(2))
        m.sub = nn.Linear(2, 2)
        m.register_buffer("buf", lib.ones(1))
        if case == "assign_tensor_to_param":
            m.w = lib.ones(2)
        elif case == "assign_int_to_module":
            m.sub = 3
        elif case == "buffer_exists":
            m.register_buffer("w", lib.ones(1))
        elif case == "param_dot":
            m.register_parameter("a.b", None)
        elif case == "param_empty":
            m.register_parameter("", None)
        elif case == "param_type":
            m.register_parameter("p", lib.ones(1))
        elif case == "buffer_type":
            m.register_buffer("q", [1.0])
        elif case == "add_module_type":
            m.add_module("q", 3)
        elif case == "add_module_dot":
            m.add_module("q.r", nn.ReLU())
        elif case == "before_init_param":
            class Bad(nn.Module):
                def __init__(self):
                    self.w = nn.Parameter(lib.ones(1))
            Bad()
        elif case == "before_init_module":
            class Bad2(nn.Module):
                def __init__(self):
                    self.sub = nn.ReLU()
            Bad2()
        elif case == "missing_attr":
            m.nope
        elif case == "nonleaf_param":
            p = nn.Parameter(lib.ones(1))
            m.register_parameter("q", p * 2)
        elif case == "assign_str_to_buffer":
            m.buf = "x"
        elif case == "get_submodule":
            m.get_submodule("sub.nope")
        elif case == "get_submodule_not_module":
            m.get_submodule("sub.weight")
        elif case == "get_parameter":
            m.get_parameter("buf")
        elif case == "train_mode":
            m.train(1)
        elif case == "to_int":
            m.to(lib.int64)
        elif case == "forward_missing":
            m(lib.ones(1))
        elif case == "init_kwargs":
            nn.Module(foo=1)
    same_error(run)


def test_get_submodule_and_parameter():
    m, t = deep(mytorch), deep(torch)
    for target in ["", "stem.proj", "body.1.lin"]:
        assert type(m.get_submodule(target)).__name__ == type(t.get_submodule(target)).__name__
    assert tuple(m.get_parameter("body.2.lin.weight").shape) == (4, 4)
    assert m.get_parameter("stem.proj.bias") is m.stem.proj.bias


def test_dir_lists_registered_members():
    m = net(mytorch)
    d = dir(m)
    assert {"fc", "scale", "steps", "blocks", "forward", "plain"} <= set(d) and d == sorted(d)
    assert "0" not in dir(m.blocks)


# ---------------------------------------------------------------------------------- containers
def test_sequential_container_ops():
    for lib in LIBS:
        nn = lib.nn
        s = nn.Sequential()
        s.add_module("first", nn.Linear(2, 3))
        s.append(nn.ReLU()).extend([nn.Linear(3, 1)])
        s.insert(1, nn.Tanh())
        assert list(s._modules) == ["first", "1", "2", "3"]  # insert renames by position
        assert len(s) == 4 and isinstance(s[-1], nn.Linear) and isinstance(s[1:3], nn.Sequential)
        assert list(s[1:3]._modules) == ["1", "2"]
        assert [type(x).__name__ for x in s] == ["Linear", "Tanh", "ReLU", "Linear"]
        del s[0]
        assert list(s._modules) == ["0", "1", "2"]
        with pytest.raises(IndexError):
            s[3]
        s2 = s + nn.Sequential(nn.Sigmoid())
        assert len(s2) == 4 and type(s.pop(0)).__name__ == "Tanh" and len(s) == 2


def test_sequential_index_error_matches_torch():
    same_error(lambda lib: lib.nn.Sequential(lib.nn.ReLU())[3])
    same_error(lambda lib: lib.nn.ModuleList([lib.nn.ReLU()])[-2])
    same_error(lambda lib: lib.nn.ParameterList()(1))


def test_modulelist_vs_python_list():
    for lib in LIBS:
        nn = lib.nn

        class WithList(nn.Module):
            def __init__(self, cls):
                super().__init__()
                self.layers = cls([nn.Linear(2, 2), nn.Linear(2, 2)])

        assert len(list(WithList(list).parameters())) == 0   # hidden from the module
        assert len(list(WithList(nn.ModuleList).parameters())) == 4
        ml = nn.ModuleList([nn.ReLU()])
        ml.append(nn.Tanh())
        ml.extend([nn.Sigmoid()])
        ml.insert(0, nn.Identity())
        assert [type(x).__name__ for x in ml] == ["Identity", "ReLU", "Tanh", "Sigmoid"]
        assert type(ml[1:]).__name__ == "ModuleList" and len(ml[1:]) == 3
        md = nn.ModuleDict([("x", nn.ReLU()), ("y", nn.Tanh())])
        md.update({"z": nn.Sigmoid()})
        assert list(md.keys()) == ["x", "y", "z"] and "y" in md and len(md) == 3
        assert type(md.pop("x")).__name__ == "ReLU" and list(md) == ["y", "z"]


def test_parameter_containers():
    for lib in LIBS:
        nn = lib.nn
        pl = nn.ParameterList([lib.ones(2), nn.Parameter(lib.zeros(3))])
        assert all(isinstance(p, nn.Parameter) for p in pl) and len(pl) == 2
        pl.append(lib.ones(1))
        assert [k for k, _ in pl.named_parameters()] == ["0", "1", "2"]
        pd = nn.ParameterDict({"b": lib.ones(1), "a": lib.ones(2)})  # plain dict: sorted keys
        assert list(pd.keys()) == ["a", "b"] and isinstance(pd["a"], nn.Parameter)
        pd["c"] = lib.zeros(1)
        assert [k for k, _ in pd.named_parameters()] == ["a", "b", "c"]


# ---------------------------------------------------------------------------------- repr
def _repr_models(lib):
    nn = lib.nn
    return {
        "mlp": mlp(lib), "net": net(lib), "deep": deep(lib), "shared": shared(lib),
        "empty_seq": nn.Sequential(), "empty_list": nn.ModuleList(),
        "modulelist_runs": nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2), nn.ReLU(),
                                          nn.Linear(2, 2), deep(lib), deep(lib)]),
        "moduledict": nn.ModuleDict({"act": nn.ReLU(inplace=True), "seq": mlp(lib)}),
        "paramlist": nn.ParameterList([lib.ones(2, 3), lib.zeros(4, dtype=lib.float64)]),
        "paramdict": nn.ParameterDict({"w": lib.ones(2)}),
        "flatten": nn.Flatten(0, 2), "unflatten": nn.Unflatten(-1, [2, 3]),
        "identity": nn.Identity(), "linear": nn.Linear(5, 6, bias=False),
    }


def test_repr_matches_torch():
    mine, ref = _repr_models(mytorch), _repr_models(torch)
    for key in ref:
        assert repr(mine[key]) == repr(ref[key]), key


def test_custom_extra_repr():
    def build(lib):
        class Scale(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.inner = lib.nn.Linear(1, 1)

            def extra_repr(self):
                return "factor=2\nmode='x'"

        return lib.nn.Sequential(Scale(), lib.nn.ModuleList([Scale()]))

    assert repr(build(mytorch)) == repr(build(torch))


# ---------------------------------------------------------------------------------- state dict
@pytest.mark.parametrize("name", list(MODELS))
def test_state_dict_keys_and_shapes(name):
    m, t = MODELS[name](mytorch), MODELS[name](torch)
    msd, tsd = m.state_dict(), t.state_dict()
    assert type(msd) is OrderedDict
    assert [(k, tuple(v.shape), str(v.dtype)) for k, v in msd.items()] == \
           [(k, tuple(v.shape), str(v.dtype)) for k, v in tsd.items()]
    assert list(msd._metadata) == list(tsd._metadata)
    assert all(not v.requires_grad for v in msd.values())
    assert [k for k, v in m.state_dict(keep_vars=True).items() if v.requires_grad] == \
           [k for k, v in t.state_dict(keep_vars=True).items() if v.requires_grad]


def test_state_dict_shares_memory():
    m = mytorch.nn.Linear(2, 2)
    sd = m.state_dict()
    sd["weight"].fill_(3.0)
    assert m.weight.tolist() == [[3.0, 3.0], [3.0, 3.0]]
    assert type(sd["weight"]) is mytorch.Tensor


@pytest.mark.parametrize("name", list(MODELS))
def test_round_trip_through_numpy(name):
    m, t = both(MODELS[name])
    for (k, a), (k2, b) in zip(m.state_dict().items(), t.state_dict().items()):
        assert k == k2
        np.testing.assert_array_equal(as_numpy(a), as_numpy(b))
    # and back: mytorch → fresh torch model
    t2 = MODELS[name](torch)
    copy_weights(m, t2)
    for a, b in zip(t.state_dict().values(), t2.state_dict().values()):
        assert torch.equal(a, b)
    arrays = state_dict_to_numpy(m.state_dict())
    assert all(isinstance(v, np.ndarray) for v in arrays.values())
    assert str(load_numpy_state_dict(MODELS[name](mytorch), arrays)) == "<All keys matched successfully>"


def test_load_state_dict_into_same_objects():
    m, t = both(mlp)
    w = m[0].weight
    m.load_state_dict({k: mytorch.from_numpy(v) for k, v in state_dict_to_numpy(t.state_dict()).items()})
    assert m[0].weight is w  # copied in place: an optimizer's references stay valid


def _net_named(lib, sizes=(3, 3)):
    nn = lib.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(*sizes)
            self.register_buffer("count", lib.zeros(1))

        def forward(self, x):
            return self.fc(x)

    return Net()


@pytest.mark.parametrize("case", ["missing", "unexpected", "both", "size", "size_and_missing",
                                  "not_tensor", "not_mapping"])
def test_load_state_dict_errors_match_torch(case):
    def run(lib):
        model = _net_named(lib)
        sd = dict(_net_named(lib).state_dict())
        if case in ("missing", "both", "size_and_missing"):
            del sd["fc.bias"]
        if case in ("unexpected", "both"):
            sd["fc.extra"] = lib.ones(1)
            sd["other.weight"] = lib.ones(1)
        if case in ("size", "size_and_missing"):
            sd["fc.weight"] = lib.ones(2, 3)
        if case == "not_tensor":
            sd["count"] = [1.0]
        if case == "not_mapping":
            sd = [1, 2]
        model.load_state_dict(sd)
    same_error(run)


def test_load_state_dict_not_strict():
    res = []
    for lib in LIBS:
        model = _net_named(lib)
        sd = dict(_net_named(lib).state_dict())
        del sd["count"]
        sd["fc.extra"] = lib.ones(1)
        out = model.load_state_dict(sd, strict=False)
        res.append((out.missing_keys, out.unexpected_keys, repr(out), type(out).__name__))
        ok = model.load_state_dict(_net_named(lib).state_dict())
        res.append((repr(ok), tuple(ok)))
    assert res[:2] == res[2:]


def test_non_persistent_buffer_not_saved_but_moved():
    mytorch.cuda.simulate()
    try:
        m = net(mytorch)
        assert "cache" not in m.state_dict() and "steps" in m.state_dict()
        m.to("cuda")
        assert m.cache.device.type == "cuda" and m.fc.weight.device.type == "cuda"
    finally:
        mytorch.cuda.simulate(False)


# ---------------------------------------------------------------------------------- modes & grads
def test_train_eval_propagate():
    for lib in LIBS:
        m = deep(lib)
        assert all(x.training for x in m.modules())
        assert m.eval() is m and not any(x.training for x in m.modules())
        m.body.train()
        assert [x.training for x in m.modules()] == \
               [False, False, False, False, True, True, True, True, True, True, True, True, True, True,
                False, False, False]


def test_zero_grad_and_freezing():
    m = mlp(mytorch)
    m(mytorch.randn(2, 4)).sum().backward()
    assert all(p.grad is not None for p in m.parameters())
    m.zero_grad(set_to_none=False)
    assert all(float(p.grad.abs().sum()) == 0.0 for p in m.parameters())
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())
    m[0].requires_grad_(False)                      # freeze the first layer
    m(mytorch.randn(2, 4)).sum().backward()
    assert m[0].weight.grad is None and m[2].weight.grad is not None
    assert [p.requires_grad for p in m.parameters()] == [False, False, True, True]


def test_apply_order_matches_torch():
    order = []
    for lib in LIBS:
        seen = []
        deep(lib).apply(lambda mod: seen.append(type(mod).__name__))
        order.append(seen)
    assert order[0] == order[1]


# ---------------------------------------------------------------------------------- devices/dtypes
def test_to_dtype_keeps_parameter_objects():
    m = net(mytorch)
    w = m.fc.weight
    m(mytorch.randn(2, 3)).sum().backward()
    m.double()
    assert m.fc.weight is w and w.dtype is mytorch.float64 and w.grad.dtype is mytorch.float64
    assert m.steps.dtype is mytorch.int64  # integer buffers keep their dtype
    assert isinstance(m.fc.weight, mytorch.nn.Parameter) and m.fc.weight.requires_grad
    m.half()
    assert m.fc.bias.dtype is mytorch.float16
    m.bfloat16()
    assert m.fc.bias.dtype is mytorch.bfloat16 and m.fc.weight is w and m.steps.dtype is mytorch.int64
    m.to(dtype=mytorch.float32)
    assert m.scale.dtype is mytorch.float32
    m.type(mytorch.float64)
    assert m.fc.weight.dtype is mytorch.float64


def test_to_memory_format_channels_last_matches_torch():
    strides = []
    for lib in LIBS:
        m = lib.nn.Sequential(lib.nn.Conv2d(3, 8, 3), lib.nn.BatchNorm2d(8), lib.nn.Linear(4, 2))
        w = m[0].weight
        assert m.to(memory_format=lib.channels_last) is m and m[0].weight is w
        got = [m[0].weight.stride(), m[2].weight.stride(), m[1].running_mean.stride()]
        m.to(lib.float64, memory_format=lib.channels_last)
        got += [m[0].weight.stride(), str(m[0].weight.dtype)]
        m.to(memory_format=lib.contiguous_format)
        got.append(m[0].weight.stride())
        strides.append(got)
    assert strides[0] == strides[1]
    assert strides[0][0] == (27, 1, 9, 3)
    same_error(lambda lib: lib.nn.Conv3d(1, 2, 1).to(memory_format=lib.channels_last))


def test_to_device_and_tensor_created_in_forward():
    nn = mytorch.nn

    class AddNoise(nn.Module):
        def forward(self, x):
            return x + mytorch.ones(x.shape, device=x.device)  # follows the input's device

    mytorch.cuda.simulate()
    try:
        m = nn.Sequential(nn.Linear(3, 2), AddNoise())
        x = mytorch.randn(4, 3, device="cuda")
        assert m.cuda() is m and m[0].weight.device.type == "cuda"
        assert m(x).device.type == "cuda"
        m.cpu()
        assert m[0].weight.device.type == "cpu"
        m.to(x)
        assert m[0].bias.device == x.device
    finally:
        mytorch.cuda.simulate(False)


# ---------------------------------------------------------------------------------- hooks
def test_forward_hook_order_and_removal():
    logs = []
    for lib in LIBS:
        log = []
        m = mlp(lib)
        h1 = m.register_forward_pre_hook(lambda mod, args: log.append("pre1"))
        m.register_forward_pre_hook(lambda mod, args: log.append("pre0"), prepend=True)
        m.register_forward_hook(lambda mod, args, out: log.append(("fwd", tuple(out.shape))))
        m[0].register_forward_hook(lambda mod, args, out: log.append("inner"))
        m.register_forward_hook(lambda mod, args, kwargs, out: log.append(("kw", sorted(kwargs))),
                                with_kwargs=True)
        m(lib.randn(2, 4))
        h1.remove()
        h1.remove()  # removing twice is harmless
        with m.register_forward_hook(lambda mod, args, out: log.append("ctx")):
            m(lib.randn(1, 4))
        m(lib.randn(1, 4))
        logs.append(log)
    assert logs[0] == logs[1]


def test_forward_hooks_modify_input_and_output():
    for lib in LIBS:
        lin = lib.nn.Linear(2, 2)
        lin.register_forward_pre_hook(lambda mod, args: args[0] * 0)
        h = lin.register_forward_hook(lambda mod, args, out: out + 100)
        y = lin(lib.ones(1, 2))
        assert np.allclose(as_numpy(y), as_numpy(lin.bias + 100))
        h.remove()
        assert np.allclose(as_numpy(lin(lib.ones(1, 2))), as_numpy(lin.bias))


def test_forward_pre_hook_with_kwargs():
    outs = []
    for lib in LIBS:
        class Scale(lib.nn.Module):
            def forward(self, x, *, factor=1.0):
                return x * factor

        m = Scale()
        m.register_forward_pre_hook(lambda mod, args, kwargs: (args, {"factor": 3.0}), with_kwargs=True)
        outs.append(as_numpy(m(lib.ones(2))))
    np.testing.assert_array_equal(outs[0], outs[1])


def test_forward_hook_always_call():
    calls = []
    for lib in LIBS:
        class Boom(lib.nn.Module):
            def forward(self, x):
                raise ValueError("boom")

        seen = []
        m = Boom()
        m.register_forward_hook(lambda mod, args, out: seen.append(out), always_call=True)
        with pytest.raises(ValueError):
            m(lib.ones(1))
        calls.append(seen)
    assert calls[0] == calls[1] == [None]


class _Capture:
    def __init__(self):
        self.calls = []

    def __call__(self, module, grad_input, grad_output):
        self.calls.append((type(module).__name__, as_numpy(list(grad_input)), as_numpy(list(grad_output)),
                           [g is None for g in grad_input], [g is None for g in grad_output]))


def _compare_calls(a, b):
    assert len(a) == len(b)
    for (n1, gi1, go1, none_i1, none_o1), (n2, gi2, go2, none_i2, none_o2) in zip(a, b):
        assert n1 == n2 and none_i1 == none_i2 and none_o1 == none_o2
        for x, y in zip(gi1 + go1, gi2 + go2):
            if y is not None:
                np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)


def test_full_backward_hook_on_composite_module_matches_torch():
    caps, grads = [], []
    x_np = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    m, t = both(mlp)
    for lib, model in [(mytorch, m), (torch, t)]:
        cap = _Capture()
        model.register_full_backward_hook(cap)
        model[2].register_full_backward_hook(cap)  # inner module fires first
        x = lib.from_numpy(x_np.copy()).requires_grad_()
        (model(x) ** 2).sum().backward()
        caps.append(cap.calls)
        grads.append(as_numpy(x.grad))
    _compare_calls(*caps)
    assert [c[0] for c in caps[0]] == ["Linear", "Sequential"]
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-5, atol=1e-6)


def _two_io(lib):
    class TwoIO(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = lib.nn.Linear(3, 3)

        def forward(self, x, flag, y, z):
            h = self.fc(x) * y
            return h.relu(), h.sum(1), 7

    return TwoIO()


def test_full_backward_hook_multiple_inputs_and_outputs():
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal(s).astype(np.float32) for s in [(2, 3), (2, 3), (2, 3)]]
    m, t = both(_two_io)
    caps, grads = [], []
    for lib, model in [(mytorch, m), (torch, t)]:
        cap = _Capture()
        model.register_full_backward_hook(cap)
        x = lib.from_numpy(xs[0].copy()).requires_grad_()
        y = lib.from_numpy(xs[1].copy())                 # does not require grad
        z = lib.from_numpy(xs[2].copy()).requires_grad_()  # requires grad, unused by forward
        a, b, _ = model(x, "flag", y, z)
        (a.sum() * 2 + (b * b).sum()).backward()
        caps.append(cap.calls)
        grads.append(as_numpy(x.grad))
    _compare_calls(*caps)
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-5, atol=1e-6)


def test_full_backward_hook_replaces_grad_input_and_pre_hook():
    res = []
    for lib in LIBS:
        lin = lib.nn.Linear(2, 2)
        with lib.no_grad():
            lin.weight.fill_(1.0)
        lin.register_full_backward_pre_hook(lambda mod, gout: (gout[0] * 10,))
        lin.register_full_backward_hook(lambda mod, gin, gout: (gin[0] * 0 + 5,))
        x = lib.ones(1, 2, requires_grad=True)
        lin(x).sum().backward()
        res.append((as_numpy(x.grad), as_numpy(lin.weight.grad)))
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b)


def test_full_backward_hook_wrong_length_error():
    def run(lib):
        lin = lib.nn.Linear(2, 2)
        lin.register_full_backward_hook(lambda mod, gin, gout: (gin[0], gin[0]))
        lin(lib.ones(1, 2, requires_grad=True)).sum().backward()
    same_error(run)


def test_full_backward_hook_when_no_input_requires_grad():
    caps = []
    m, t = both(mlp)
    for lib, model in [(mytorch, m), (torch, t)]:
        cap = _Capture()
        h = model.register_full_backward_hook(cap)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            model(lib.ones(2, 4)).sum().backward()
        assert any("no inputs require gradients" in str(x.message) for x in w)
        h.remove()
        model(lib.ones(2, 4)).sum().backward()  # removed: not called again
        caps.append(cap.calls)
    _compare_calls(*caps)
    assert len(caps[0]) == 1


def test_full_backward_hook_output_without_gradient_is_none():
    """GRU's ``h_n`` unused: hooks see ``None`` for it (not zeros); an unused input gets zeros."""
    caps, pre_caps, grads = [], [], []
    x_np = np.random.default_rng(2).standard_normal((3, 2, 3)).astype(np.float32)
    m, t = both(lambda lib: lib.nn.GRU(3, 4))
    for lib, model in [(mytorch, m), (torch, t)]:
        cap, pre = _Capture(), []
        model.register_full_backward_pre_hook(lambda mod, gout: pre.append([g is None for g in gout]))
        model.register_full_backward_hook(cap)
        x = lib.from_numpy(x_np.copy()).requires_grad_()
        h0 = lib.zeros(1, 2, 4, requires_grad=True)
        out, _ = model(x, h0)
        out.square().sum().backward()
        caps.append(cap.calls)
        pre_caps.append(pre)
        grads.append(as_numpy(x.grad))
    _compare_calls(*caps)
    assert pre_caps[0] == pre_caps[1] == [[False, True]]
    assert caps[0][0][4] == [False, True]  # grad_output: (d out, None)
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------- Linear & F
@pytest.mark.parametrize("shape", [(4,), (3, 4), (2, 3, 4)], ids=str)
@pytest.mark.parametrize("bias", [True, False])
def test_linear_forward_backward_matches_torch(shape, bias):
    m = mytorch.nn.Linear(4, 5, bias=bias)
    t = torch.nn.Linear(4, 5, bias=bias)
    copy_weights(t, m)
    x_np = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    xm = mytorch.from_numpy(x_np.copy()).requires_grad_()
    xt = torch.from_numpy(x_np.copy()).requires_grad_()
    ym, yt = m(xm), t(xt)
    assert_same(ym, yt)
    w = np.random.default_rng(3).standard_normal(tuple(yt.shape)).astype(np.float32)
    (ym * mytorch.from_numpy(w)).sum().backward()
    (yt * torch.from_numpy(w)).sum().backward()
    assert_same(xm.grad, xt.grad)
    assert_same(m.weight.grad, t.weight.grad)
    if bias:
        assert_same(m.bias.grad, t.bias.grad)


LINEAR_DTYPE_ERRORS = {
    "float_input_double_linear": lambda lib: lib.nn.Linear(3, 2).double()(lib.randn(4, 3)),
    "unbatched": lambda lib: lib.nn.Linear(3, 2).double()(lib.randn(3)),
    "double_input_3d": lambda lib: lib.nn.Linear(3, 2)(lib.randn(2, 4, 3).double()),
    "long_input": lambda lib: lib.nn.Linear(3, 2)(lib.ones(4, 3, dtype=lib.int64)),
    "no_bias": lambda lib: lib.nn.Linear(3, 2, bias=False).double()(lib.randn(4, 3)),
    "bias_dtype": lambda lib: lib.nn.functional.linear(lib.randn(4, 3), lib.randn(2, 3),
                                                       lib.randn(2).double()),
}


@pytest.mark.parametrize("fn", LINEAR_DTYPE_ERRORS.values(), ids=LINEAR_DTYPE_ERRORS.keys())
def test_linear_dtype_errors_match_torch(fn):
    same_error(fn)


def test_functional_matches_modules():
    F = mytorch.nn.functional
    x = mytorch.randn(3, 4)
    lin = mytorch.nn.Linear(4, 2)
    assert mytorch.equal(F.linear(x, lin.weight, lin.bias), lin(x))
    assert mytorch.equal(F.relu(x), mytorch.nn.ReLU()(x))
    y = x.clone()
    assert F.relu(y, inplace=True) is y and float(y.min()) >= 0
    assert mytorch.equal(mytorch.nn.Sigmoid()(x), mytorch.sigmoid(x))
    assert mytorch.equal(mytorch.nn.Tanh()(x), mytorch.tanh(x))
    assert tuple(mytorch.nn.Unflatten(1, (2, 2))(x).shape) == (3, 2, 2)


def test_linear_device_and_dtype_kwargs():
    lin = mytorch.nn.Linear(2, 3, dtype=mytorch.float64)
    assert lin.weight.dtype is mytorch.float64 and lin.bias.dtype is mytorch.float64
    assert lin.weight.requires_grad and isinstance(lin.bias, mytorch.nn.Parameter)


# ---------------------------------------------------------------------------------- init
@pytest.mark.parametrize("args", [("linear",), ("conv2d",), ("sigmoid",), ("tanh",), ("relu",),
                                  ("leaky_relu",), ("leaky_relu", 0.2), ("leaky_relu", 1),
                                  ("selu",), ("leaky_relu", math.sqrt(5))], ids=str)
def test_calculate_gain_matches_torch(args):
    assert mytorch.nn.init.calculate_gain(*args) == torch.nn.init.calculate_gain(*args)


@pytest.mark.parametrize("case", ["gain_unknown", "gain_bad_param", "fan_1d", "bad_mode"])
def test_init_errors_match_torch(case):
    def run(lib):
        init = lib.nn.init
        if case == "gain_unknown":
            init.calculate_gain("swish")
        elif case == "gain_bad_param":
            init.calculate_gain("leaky_relu", True)
        elif case == "fan_1d":
            init.xavier_uniform_(lib.empty(5))
        elif case == "bad_mode":
            init.kaiming_normal_(lib.empty(3, 3), mode="fan_avg")
    same_error(run)


@pytest.mark.parametrize("shape", [(3, 4), (8, 4, 3, 3), (2, 5, 7)], ids=str)
def test_fan_in_fan_out_matches_torch(shape):
    assert mytorch.nn.init._calculate_fan_in_and_fan_out(mytorch.empty(shape)) == \
        torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(shape))


def _std_bound(name, kwargs, shape):
    mytorch.manual_seed(0)
    t = mytorch.empty(shape)
    getattr(mytorch.nn.init, name)(t, **kwargs)
    return as_numpy(t)


@pytest.mark.parametrize("name,kwargs,shape,bound,std", [
    ("kaiming_uniform_", {}, (256, 400), math.sqrt(6 / 400), math.sqrt(2 / 400)),
    ("kaiming_uniform_", {"a": math.sqrt(5)}, (256, 400), 1 / math.sqrt(400), 1 / math.sqrt(1200)),
    ("kaiming_uniform_", {"mode": "fan_out", "nonlinearity": "relu"}, (200, 50, 3),
     math.sqrt(6 / 600), math.sqrt(2 / 600)),
    ("kaiming_normal_", {"nonlinearity": "relu"}, (256, 400), None, math.sqrt(2 / 400)),
    ("xavier_uniform_", {}, (300, 200), math.sqrt(6 / 500), math.sqrt(2 / 500)),
    ("xavier_uniform_", {"gain": 5 / 3}, (300, 200), 5 / 3 * math.sqrt(6 / 500), 5 / 3 * math.sqrt(2 / 500)),
    ("xavier_normal_", {}, (300, 200), None, math.sqrt(2 / 500)),
    ("trunc_normal_", {"std": 0.5, "a": -0.5, "b": 0.5}, (200, 200), 0.5, None),
    ("uniform_", {"a": -2.0, "b": 3.0}, (100, 100), 3.0, 5 / math.sqrt(12)),
    ("normal_", {"mean": 1.0, "std": 2.0}, (100, 100), None, 2.0),
], ids=lambda v: v if isinstance(v, str) else None)
def test_init_statistics(name, kwargs, shape, bound, std):
    a = _std_bound(name, kwargs, shape)
    if bound is not None:
        assert np.abs(a).max() <= bound + 1e-6
        if name != "trunc_normal_":
            assert np.abs(a).max() > 0.97 * bound  # the whole range is used
    if std is not None:
        assert abs(a.std() - std) / std < 0.03
    if name == "trunc_normal_":
        assert a.min() >= -0.5 and a.max() <= 0.5


def test_constant_ones_zeros_and_no_grad():
    p = mytorch.nn.Parameter(mytorch.empty(2, 2))
    assert mytorch.nn.init.constant_(p, 0.5) is p and p.tolist() == [[0.5, 0.5], [0.5, 0.5]]
    assert p.grad_fn is None  # init runs under no_grad: the parameter stays a leaf
    assert mytorch.nn.init.ones_(p).sum().item() == 4 and mytorch.nn.init.zeros_(p).sum().item() == 0


def test_linear_default_init_distribution():
    mytorch.manual_seed(0)
    lin = mytorch.nn.Linear(300, 200)
    w, b = as_numpy(lin.weight), as_numpy(lin.bias)
    bound = 1 / math.sqrt(300)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.97 * bound
    assert np.abs(b).max() <= bound
    assert abs(w.std() - bound / math.sqrt(3)) / (bound / math.sqrt(3)) < 0.03


def test_kaiming_zero_element_warns():
    for lib in LIBS:
        with pytest.warns(UserWarning, match="zero-element"):
            lib.nn.init.kaiming_uniform_(lib.empty(0, 3))


# ---------------------------------------------------------------------------------- utils
def test_ntuple_helpers():
    import torch.nn.modules.utils as tu

    for x in [3, (1, 2), [4, 5, 6]]:
        assert _single(x) == tu._single(x) and _pair(x) == tu._pair(x)
        assert _triple(x) == tu._triple(x) and _quadruple(x) == tu._quadruple(x)


def test_deepcopy_module():
    m = net(mytorch)
    c = copy.deepcopy(m)
    assert c.fc.weight is not m.fc.weight and mytorch.equal(c.fc.weight, m.fc.weight)
    assert isinstance(c.fc.weight, mytorch.nn.Parameter)
    assert [k for k, _ in c.named_parameters()] == [k for k, _ in m.named_parameters()]


def _lazy_run(lib):
    nn = lib.nn
    m = nn.LazyLinear(4)
    out = [repr(m), repr(m.weight), type(m.weight).__name__, repr(m.state_dict()),
           len(list(m.parameters()))]
    y = m(lib.ones(2, 3))
    out += [type(m).__name__, repr(m), list(m.weight.shape), type(m.weight).__name__,
            list(y.shape), m.weight.requires_grad, type(m) == nn.Linear,
            bool(m.weight.abs().max() <= 1 / 3 ** 0.5)]
    c = nn.LazyConv2d(6, kernel_size=5, padding=2)
    out.append(repr(c))
    c(lib.ones(1, 1, 8, 8))
    out += [repr(c), type(c).__name__, list(c.weight.shape)]
    b = nn.LazyBatchNorm2d()
    out += [repr(b), repr(b.state_dict())]
    b(lib.ones(2, 3, 4, 4))
    out += [repr(b), list(b.running_mean.shape), type(b.running_mean).__name__,
            b.num_batches_tracked.item(), sorted(b.state_dict())]
    for bad in (lambda: nn.LazyConv2d(3, 3)(lib.ones(5)),):
        with pytest.raises(RuntimeError) as e:
            bad()
        out.append(str(e.value))
    return out


def test_lazy_modules_match_torch():
    """LazyLinear, LazyConv2d, LazyBatchNorm2d: placeholders until the first forward, then the
    ordinary layer (its class, shapes, init bounds, repr), as in torch."""
    assert _lazy_run(mytorch) == _lazy_run(torch)
