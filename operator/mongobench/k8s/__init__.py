"""Kubernetes plumbing shared by every domain: clients, server-side apply, conditions, events."""
