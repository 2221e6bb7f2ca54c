"""driftgate's controller: domain models, diff engines, store, services, controller process."""

__version__ = "0.1.0"
