"""The plugin manager: entry-point discovery, broken-plugin isolation and component look-up by name.

Loading is lazy and happens once, on the first look-up. Every entry point of the ``sb3_hir`` group is loaded
on its own (pluggy's ``load_setuptools_entrypoints`` stops at the first failure), so one broken plugin is
reported and skipped while the others load. sb3-hir's own components arrive through the same path, from the
``builtin`` entry point of the ``sb3-hir`` distribution.

Environment variables, read when the manager loads:

- ``SB3_HIR_LOAD_PLUGINS=a,b``: allow-list of plugins (entry-point or distribution names) besides the
  built-in one; set and empty means built-in only.
- ``SB3_HIR_BLOCK_PLUGINS=a,b``: block-list, applied after the allow-list (the built-in plugin cannot be
  blocked).
- ``SB3_HIR_STRICT_PLUGINS=1``: re-raise plugin errors instead of warning.
"""

from __future__ import annotations

import contextlib
import importlib.metadata as importlib_metadata
import os
import re
import traceback
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pluggy

from sb3_hir import hookspecs
from sb3_hir.hookspecs import HOOKS, PROJECT_NAME

#: The component kinds, in hook order.
KINDS: tuple[str, ...] = tuple(HOOKS)

#: Entry-point group that plugins declare.
ENTRY_POINT_GROUP = PROJECT_NAME

BUILTIN_DISTRIBUTION = "sb3-hir"
BUILTIN_MODULE = "sb3_hir.builtin"

LOAD_ENV = "SB3_HIR_LOAD_PLUGINS"
BLOCK_ENV = "SB3_HIR_BLOCK_PLUGINS"
STRICT_ENV = "SB3_HIR_STRICT_PLUGINS"


class PluginError(RuntimeError):
    """A plugin could not be loaded, or its registrations conflict."""


class UnknownComponentError(PluginError, LookupError):
    """No installed plugin provides the requested name."""


class DuplicateComponentError(PluginError):
    """Two registrations claim the same name for one kind."""


class PluginWarning(UserWarning):
    """A plugin failed and was skipped; the other plugins still load."""


@dataclass(frozen=True)
class ComponentInfo:
    """What a name resolves to, and which plugin provides it."""

    kind: str
    name: str
    factory: Callable[..., Any]
    plugin: str
    distribution: str | None
    version: str | None
    description: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "plugin": self.plugin,
            "distribution": self.distribution,
            "version": self.version,
            "description": self.description,
            "factory": _qualname(self.factory),
        }


@dataclass(frozen=True)
class PluginInfo:
    """A loaded (or broken) plugin; ``error`` is set when it is broken."""

    name: str
    distribution: str | None
    version: str | None
    module: str | None
    components: dict[str, tuple[str, ...]] = field(default_factory=dict)
    error: str | None = None

    @property
    def broken(self) -> bool:
        return self.error is not None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "distribution": self.distribution,
            "version": self.version,
            "module": self.module,
        }
        if self.error is None:
            out["components"] = {kind: list(names) for kind, names in self.components.items()}
        else:
            out["error"] = self.error
        return out


def _qualname(obj: Any) -> str:
    module = getattr(obj, "__module__", None)
    name = getattr(obj, "__qualname__", None) or type(obj).__qualname__
    return f"{module}.{name}" if module else str(name)


def _first_doc_line(obj: Any) -> str:
    doc = getattr(obj, "__doc__", None) or ""
    lines = [line.strip() for line in doc.strip().splitlines()]
    return lines[0] if lines else ""


def normalize_name(name: str) -> str:
    """PEP 503 normalization, so ``sb3_hir_example`` matches ``sb3-hir-example``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _split_list(value: str) -> set[str]:
    return {normalize_name(part.strip()) for part in value.split(",") if part.strip()}


def check_kind(kind: str) -> str:
    """Validate a component kind, naming the accepted ones."""
    if kind not in HOOKS:
        raise ValueError(f"kind must be one of {', '.join(map(repr, KINDS))}; got {kind!r}")
    return kind


class PluginManager:
    """Discovers plugins once and resolves component names.

    :param load_entrypoints: discover plugins from installed entry points; ``False`` gives an empty
        manager for in-process plugins only (tests).
    :param environ: where to read the ``SB3_HIR_*`` variables; defaults to ``os.environ``.
    """

    def __init__(self, load_entrypoints: bool = True, environ: Mapping[str, str] | None = None) -> None:
        self._pm = pluggy.PluginManager(PROJECT_NAME)
        self._pm.add_hookspecs(hookspecs)
        self._load_entrypoints = load_entrypoints
        self._environ = os.environ if environ is None else environ
        self._entrypoints_loaded = False
        self._collected = False
        # plugin name -> (distribution, version, module)
        self._meta: dict[str, tuple[str | None, str | None, str | None]] = {}
        self._broken: dict[str, PluginInfo] = {}
        self._components: dict[str, dict[str, ComponentInfo]] = {kind: {} for kind in KINDS}

    # -- configuration ---------------------------------------------------------------------------------------
    @property
    def strict(self) -> bool:
        return self._environ.get(STRICT_ENV, "").strip().lower() in {"1", "true", "yes", "on"}

    def _allowed(self, entry_point: importlib_metadata.EntryPoint, distribution: str | None) -> bool:
        names = {normalize_name(entry_point.name)}
        if distribution:
            names.add(normalize_name(distribution))
        allow = self._environ.get(LOAD_ENV)
        if allow is not None and not names & _split_list(allow):
            return False
        block = self._environ.get(BLOCK_ENV)
        return not (block is not None and names & _split_list(block))

    # -- loading ---------------------------------------------------------------------------------------------
    def register(self, plugin: Any, name: str | None = None) -> str:
        """Register an in-process plugin (a module or object with hook implementations).

        Registering invalidates the collected components, so the next look-up sees the new plugin.
        """
        self._ensure_entrypoints()
        plugin_name = self._pm.register(plugin, name=name)
        if plugin_name is None:  # pragma: no cover - pluggy returns None only for blocked names
            raise PluginError(f"plugin {name!r} is blocked")
        module = getattr(plugin, "__name__", None) or _qualname(type(plugin))
        self._meta[plugin_name] = (None, None, module)
        self._collected = False
        return plugin_name

    def unregister(self, name: str) -> None:
        """Remove a plugin by name; its components disappear on the next look-up."""
        self._pm.unregister(name=name)
        self._meta.pop(name, None)
        self._broken.pop(name, None)
        self._collected = False

    def _fail(self, plugin: str, distribution: str | None, version: str | None, module: str | None,
              exc: BaseException, stage: str) -> None:
        message = f"{stage}: {type(exc).__name__}: {exc}"
        if self.strict:
            raise PluginError(f"sb3-hir plugin {plugin!r} ({distribution or 'in-process'}) failed during "
                              f"{message}") from exc
        detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        warnings.warn(
            f"sb3-hir plugin {plugin!r} ({distribution or 'in-process'}) is broken and was skipped; "
            f"{stage} raised {detail}. Set {STRICT_ENV}=1 to raise instead.",
            PluginWarning,
            stacklevel=4,
        )
        self._broken[plugin] = PluginInfo(plugin, distribution, version, module, error=message)

    def _ensure_entrypoints(self) -> None:
        if self._entrypoints_loaded:
            return
        self._entrypoints_loaded = True
        if not self._load_entrypoints:
            return
        for entry_point in importlib_metadata.entry_points(group=ENTRY_POINT_GROUP):
            dist = getattr(entry_point, "dist", None)
            distribution = dist.name if dist is not None else None
            version = dist.version if dist is not None else None
            builtin = entry_point.value == BUILTIN_MODULE
            if not builtin and not self._allowed(entry_point, distribution):
                continue
            name = entry_point.name
            if self._pm.has_plugin(name) or name in self._broken:
                name = f"{distribution}:{entry_point.name}"
            try:
                module = entry_point.load()
            except Exception as exc:
                self._fail(name, distribution, version, entry_point.value, exc, "import")
                continue
            try:
                self._pm.register(module, name=name)
            except Exception as exc:  # pluggy validates hook names and signatures here
                self._fail(name, distribution, version, entry_point.value, exc, "registration")
                continue
            self._meta[name] = (distribution, version, entry_point.value)

    def _collect(self) -> None:
        self._ensure_entrypoints()
        if self._collected:
            return
        impls: dict[str, list[tuple[str, pluggy.HookImpl]]] = {}
        for kind, hook_name in HOOKS.items():
            for impl in getattr(self._pm.hook, hook_name).get_hookimpls():
                impls.setdefault(impl.plugin_name, []).append((kind, impl))
        components: dict[str, dict[str, ComponentInfo]] = {kind: {} for kind in KINDS}
        for plugin_name, _plugin in self._pm.list_name_plugin():
            if plugin_name in self._broken:
                continue
            distribution, version, module = self._meta.get(plugin_name, (None, None, None))
            staged: list[ComponentInfo] = []
            stage = "hooks"
            try:
                for kind, impl in impls.get(plugin_name, []):
                    stage = HOOKS[kind]
                    register = self._make_register(kind, plugin_name, distribution, version, staged)
                    impl.function(*[register for _ in impl.argnames])
            except Exception as exc:
                self._fail(plugin_name, distribution, version, module, exc, stage)
                continue
            for info in staged:
                existing = components[info.kind].get(info.name)
                if existing is not None:
                    raise DuplicateComponentError(
                        f"{info.kind} {info.name!r} is registered by both plugin {existing.plugin!r} "
                        f"({existing.distribution or 'in-process'}) and plugin {info.plugin!r} "
                        f"({info.distribution or 'in-process'}); uninstall one of them or block it with "
                        f"{BLOCK_ENV}."
                    )
                components[info.kind][info.name] = info
        self._components = components
        self._collected = True

    @staticmethod
    def _make_register(kind: str, plugin: str, distribution: str | None, version: str | None,
                       staged: list[ComponentInfo]) -> hookspecs.Register:
        def register(name: str, factory: Any, description: str | None = None) -> None:
            if not isinstance(name, str) or not name.strip() or name != name.strip():
                raise ValueError(f"{kind} name must be a non-empty string without surrounding spaces; got "
                                 f"{name!r}")
            if not callable(factory):
                raise TypeError(f"{kind} {name!r}: factory must be callable; got {factory!r}")
            if any(info.kind == kind and info.name == name for info in staged):
                raise DuplicateComponentError(f"plugin {plugin!r} registers {kind} {name!r} twice")
            staged.append(ComponentInfo(kind, name, factory, plugin, distribution, version,
                                        description or _first_doc_line(factory)))

        return register

    # -- look-ups --------------------------------------------------------------------------------------------
    def available(self, kind: str) -> dict[str, ComponentInfo]:
        """Names of ``kind`` that can be created, with the plugin providing each."""
        check_kind(kind)
        self._collect()
        return dict(sorted(self._components[kind].items()))

    def info(self, kind: str, name: str) -> ComponentInfo:
        available = self.available(kind)
        if name not in available:
            listing = ", ".join(f"{n!r} (from {i.plugin})" for n, i in available.items()) or "none installed"
            broken = f"; broken plugins: {', '.join(sorted(self._broken))}" if self._broken else ""
            raise UnknownComponentError(f"unknown {kind} {name!r}; available: {listing}{broken}")
        return available[name]

    def get(self, kind: str, name: str) -> Callable[..., Any]:
        """The factory registered as ``name``."""
        return self.info(kind, name).factory

    def create(self, kind: str, name: str, **kwargs: Any) -> Any:
        """Build the component registered as ``name`` with ``kwargs``."""
        return self.get(kind, name)(**kwargs)

    def resolve(self, kind: str, spec: Any, **kwargs: Any) -> Any:
        """Create ``spec`` by name when it is a string; pass instances through unchanged."""
        if isinstance(spec, str):
            return self.create(kind, spec, **kwargs)
        return spec

    def plugins(self) -> list[PluginInfo]:
        """Loaded plugins with their components, then the broken ones with their errors."""
        self._collect()
        loaded = []
        for plugin_name, _plugin in self._pm.list_name_plugin():
            if plugin_name in self._broken:
                continue
            distribution, version, module = self._meta.get(plugin_name, (None, None, None))
            components = {
                kind: tuple(name for name, info in sorted(self._components[kind].items())
                            if info.plugin == plugin_name)
                for kind in KINDS
            }
            components = {kind: names for kind, names in components.items() if names}
            loaded.append(PluginInfo(plugin_name, distribution, version, module, components))
        return loaded + list(self._broken.values())

    def broken(self) -> list[PluginInfo]:
        self._collect()
        return list(self._broken.values())


_manager: PluginManager | None = None


def get_plugin_manager() -> PluginManager:
    """The process-wide manager, created on first use."""
    global _manager
    if _manager is None:
        _manager = PluginManager()
    return _manager


def reset() -> None:
    """Forget the process-wide manager, so the next look-up rediscovers plugins and re-reads the env vars."""
    global _manager
    _manager = None


@contextlib.contextmanager
def use(manager: PluginManager) -> Iterator[PluginManager]:
    """Make ``manager`` the process-wide manager inside the ``with`` block (tests, isolated sessions)."""
    global _manager
    previous = _manager
    _manager = manager
    try:
        yield manager
    finally:
        _manager = previous


def register(plugin: Any, name: str | None = None) -> str:
    """Register an in-process plugin with the process-wide manager."""
    return get_plugin_manager().register(plugin, name=name)


def available(kind: str) -> dict[str, ComponentInfo]:
    """See :meth:`PluginManager.available`."""
    return get_plugin_manager().available(kind)


def get(kind: str, name: str) -> Callable[..., Any]:
    """See :meth:`PluginManager.get`."""
    return get_plugin_manager().get(kind, name)


def create(kind: str, name: str, **kwargs: Any) -> Any:
    """See :meth:`PluginManager.create`."""
    return get_plugin_manager().create(kind, name, **kwargs)


def resolve(kind: str, spec: Any, **kwargs: Any) -> Any:
    """See :meth:`PluginManager.resolve`."""
    return get_plugin_manager().resolve(kind, spec, **kwargs)


def plugins() -> list[PluginInfo]:
    """See :meth:`PluginManager.plugins`."""
    return get_plugin_manager().plugins()


def names(kind: str) -> Iterable[str]:
    """Just the names of ``kind``, sorted."""
    return list(available(kind))
