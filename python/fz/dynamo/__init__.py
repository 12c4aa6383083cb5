"""torch.compile(model, backend="fz"): fz as a TorchDynamo backend.

    import torch, fz
    compiled = torch.compile(model, backend="fz")
    fz.explain(model, *example_inputs)      # the partition, printed

AOTAutograd turns what dynamo captured into functional ATen graphs
(forward and backward); the groups of ATen nodes fz can express become
fz fusions, the rest stays ATen (compiler.py). This package imports
torch only when a graph is compiled, so that `import fz` works without
torch; tables.py is plain data about ATen.

The backend is known to torch by the name "fz" two ways: the wheel's
torch_dynamo_backends entry point (fz = "fz.dynamo:backend"), which
torch loads on first use of the name, and register(), which `import fz`
calls when torch is installed.
"""

NAME = "fz"


def backend(gm, example_inputs, **kwargs):
    """The backend callable: torch.compile(model, backend=fz.backend) is
    the same as backend="fz"."""
    from .compiler import backend as compile_backend
    return compile_backend(gm, example_inputs, **kwargs)


def explain(fn, *inputs, **kwargs):
    """Compiles fn with the fz backend, runs it on inputs, prints the
    partition (fusions, their ops and schedulers; ATen nodes and why) and
    returns it as a string. See explain.py for the keyword arguments."""
    from .explain import explain as run_explain
    return run_explain(fn, *inputs, **kwargs)


def register():
    """Registers backend="fz" with TorchDynamo unless torch already knows
    the name: registered before, or declared by the installed wheel's
    entry point, which torch loads (and registers) itself; registering it
    here too would make that registration fail as a duplicate."""
    try:
        from torch._dynamo.backends import registry
    except Exception as e:  # a torch without dynamo
        import warnings
        warnings.warn("fz: torch._dynamo is unavailable (%s); backend=\"fz\" "
                      "is not registered" % e)
        return False
    compiled = getattr(registry, "_COMPILER_FNS", None)
    known = getattr(registry, "_BACKENDS", {})
    if compiled is not None:
        if NAME in compiled or known.get(NAME) is not None:
            return False
    elif NAME in known:
        return False
    try:
        registry.register_backend(compiler_fn=backend, name=NAME)
    except (AssertionError, RuntimeError, ValueError):
        return False
    return True
