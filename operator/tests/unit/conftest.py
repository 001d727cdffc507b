"""The unit tier's shared test doubles (fake_kube: an in-memory KubeApi) sit next to this file,
so the tests in every subfolder import them by name."""
