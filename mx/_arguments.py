"""Classes that remember the arguments they were constructed with, so an
optimizer or a learning-rate scheduler can be written as JSON (its class name
and parameters) and built again elsewhere (a KVStore server) without pickle."""
import functools
import inspect


def constructor_parameters(cls):
    """{name: default} of every named parameter the constructors along the
    class's MRO declare (``self``, ``*args``, ``**kwargs`` left out); a
    subclass's default wins over its base's."""
    params = {}
    for klass in reversed(cls.__mro__):
        init = klass.__dict__.get("__init__")
        init = getattr(init, "__wrapped__", init)
        if init is None or klass is object:
            continue
        for p in list(inspect.signature(init).parameters.values())[1:]:
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
                params[p.name] = None if p.default is p.empty else p.default
    return params


class RecordsArguments:
    """Mixin: ``self._arguments`` holds the arguments given to the outermost
    constructor call (a subclass passing them on to ``super().__init__``
    does not overwrite them), bound to their parameter names."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is None:
            return
        signature = inspect.signature(init)

        @functools.wraps(init)
        def recording_init(self, *args, **kw):
            if "_arguments" not in self.__dict__:
                bound = signature.bind(self, *args, **kw)
                given = dict(bound.arguments)
                given.pop(next(iter(signature.parameters)))       # self
                for name, p in signature.parameters.items():
                    if p.kind is p.VAR_KEYWORD and name in given:
                        given.update(given.pop(name))
                    elif p.kind is p.VAR_POSITIONAL and name in given:
                        given.pop(name)
                self.__dict__["_arguments"] = given
            init(self, *args, **kw)

        cls.__init__ = recording_init
