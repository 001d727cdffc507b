// etcd built from the pinned go.etcd.io/etcd/server module for the local test plane.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
