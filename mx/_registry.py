"""Name -> class registries for serialisable objects (MXNet's ``mxnet.registry``).

Initializers and metrics are created from names, from JSON strings
(``'["xavier", {"magnitude": 2}]'``, what ``dumps()`` writes and what a
symbol's ``__init__`` attribute holds) and from config dicts.
"""
import json
import warnings

_REGISTRY = {}


def get_registry(base_class):
    """A copy of the name -> class table for ``base_class``."""
    return dict(_REGISTRY.setdefault(base_class, {}))


def get_register_func(base_class, nickname):
    """A decorator registering subclasses of ``base_class`` by lower-cased name."""
    registry = _REGISTRY.setdefault(base_class, {})

    def register(klass, name=None):
        if not (isinstance(klass, type) and issubclass(klass, base_class)):
            raise TypeError(f"{nickname}.register: can only register a subclass of "
                            f"{base_class.__name__}, got {klass!r}")
        name = (klass.__name__ if name is None else name).lower()
        if name in registry and registry[name] is not klass:
            old = registry[name]
            warnings.warn(f"New {nickname} {klass.__module__}.{klass.__name__} registered with "
                          f"name {name} is overriding existing {nickname} "
                          f"{old.__module__}.{old.__name__}", UserWarning, stacklevel=2)
        registry[name] = klass
        return klass
    register.__doc__ = f"Registers a {nickname} class under its lower-cased name."
    return register


def get_alias_func(base_class, nickname):
    """A decorator factory registering a class under extra names."""
    register = get_register_func(base_class, nickname)

    def alias(*aliases):
        def reg(klass):
            for name in aliases:
                register(klass, name)
            return klass
        return reg
    return alias


def get_create_func(base_class, nickname):
    """``create(name_or_instance_or_json, *args, **kwargs)`` for ``base_class``."""
    registry = _REGISTRY.setdefault(base_class, {})

    def create(*args, **kwargs):
        if args:
            name, args = args[0], args[1:]
        elif nickname in kwargs:
            name = kwargs.pop(nickname)
        else:
            raise TypeError(f"{nickname}.create: missing the {nickname} name (first argument)")
        if isinstance(name, base_class):
            if args or kwargs:
                raise ValueError(f"{nickname}.create: {name!r} is already an instance; "
                                 "extra arguments are invalid")
            return name
        if isinstance(name, dict):
            return create(**name)
        if not isinstance(name, str):
            raise TypeError(f"{nickname}.create: the {nickname} must be a name, a JSON string, "
                            f"a dict or a {base_class.__name__}, got {type(name).__name__}")
        if name.startswith("[") or name.startswith("{"):
            if args or kwargs:
                raise ValueError(f"{nickname}.create: a JSON config takes no extra arguments")
            try:
                config = json.loads(name)
            except json.JSONDecodeError as err:
                raise ValueError(f"{nickname}.create: {name!r} is not valid JSON: {err}") from None
            if isinstance(config, dict):
                return create(**config)
            if not (isinstance(config, list) and len(config) == 2
                    and isinstance(config[0], str) and isinstance(config[1], dict)):
                raise ValueError(f"{nickname}.create: a JSON list config must be "
                                 f'["name", {{kwargs}}], got {name!r}')
            return create(config[0], **config[1])
        key = name.lower()
        if key not in registry:
            raise ValueError(f"{nickname}.create: {name!r} is not registered; known: "
                             f"{', '.join(sorted(registry))}. Register it with "
                             f"mx.{nickname}.register first")
        return registry[key](*args, **kwargs)
    create.__doc__ = (f"Creates a {nickname} from a name, a JSON string (``dumps()``), "
                      f"a config dict or an instance (returned as is).")
    return create
