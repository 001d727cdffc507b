"""I/O: the MongoCluster controller's calls to the Kubernetes API and to MongoDB, carrying out
what build/ makes and decide/ says."""
