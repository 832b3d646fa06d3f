"""The one exception type users see for bad input."""

from __future__ import annotations


class ConfigError(ValueError):
    """Bad configuration value, reported as one line before any computation.

    Parameters
    ----------
    key : str
        Dotted config key, e.g. ``"grid.sweeps.N.values"``.
    got : object
        The offending value.
    allowed : str or sequence of str
        The allowed values, as a description (``"> 0"``) or a list of names.
    """

    def __init__(self, key: str, got, allowed):
        if not isinstance(allowed, str):
            allowed = ", ".join(str(a) for a in allowed)
        self.key, self.got, self.allowed = key, got, allowed
        super().__init__(f"{key}: got {got!r}; allowed: {allowed}")

    def under(self, prefix: str) -> "ConfigError":
        """The same error with ``prefix.`` in front of the key."""
        return ConfigError(f"{prefix}.{self.key}", self.got, self.allowed)


def check(cond: bool, key: str, got, allowed) -> None:
    """Raise :class:`ConfigError` unless ``cond``."""
    if not cond:
        raise ConfigError(key, got, allowed)
