"""Telemetry: the Prometheus metrics, their exposition, tick metrics and loop lag.

Contract: a leaf: imports nothing else of the service.
"""
