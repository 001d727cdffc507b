"""What the operator tells the outside: metrics, structured logs, Kubernetes Events."""
