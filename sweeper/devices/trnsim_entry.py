"""Registers ``trnsim`` in the device registry without importing torch until it is used."""

from __future__ import annotations

from sweeper.devices.base import register_device


@register_device("trnsim")
def trnsim_device(spec: str, **options):
    """Factory: the simulated accelerator (imports the backend lazily)."""
    from sweeper.devices.trnsim.device import TrnsimDevice

    return TrnsimDevice(spec, **options)
