"""What a sweep is told: the settings (``config``), their checks (``validate``), the errors raised on purpose (``errors``) and the lazy plug-point registries (``plugins``)."""
