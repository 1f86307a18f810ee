"""(being written) Printing tensors like torch."""
_opts = {}
def set_printoptions(**kw): _opts.update(kw)
def get_printoptions(): return dict(_opts)
def tensor_repr(t):
    return f"tensor({t._host().tolist()})"
