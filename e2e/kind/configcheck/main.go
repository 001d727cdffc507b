// Command kind-configcheck loads kind cluster configs exactly as `kind create cluster --config`
// does (kind's own loader: strict decoding into its v1alpha4 types, defaults, conversion, then its
// validation) without needing Docker, and prints what kind would create, as JSON.
//
// kind's loader is an internal package, importable only from inside the kind module, so this file
// is built from a copy of the pinned kind module (hack/build-tools.sh kind-configcheck copies it
// to pkg/mongobenchconfigcheck there); it is not a package of this repository.
//
//	kind-configcheck FILE...   exit 0 and one JSON object per file, or exit 1 naming the problem
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"sigs.k8s.io/kind/pkg/internal/apis/config/encoding"
)

type node struct {
	Role   string            `json:"role"`
	Image  string            `json:"image"`
	Labels map[string]string `json:"labels"`
}

type cluster struct {
	File  string `json:"file"`
	Name  string `json:"name"`
	Nodes []node `json:"nodes"`
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: kind-configcheck FILE...")
		os.Exit(2)
	}
	failed := false
	for _, path := range os.Args[1:] {
		cfg, err := encoding.Load(path)
		if err == nil {
			err = cfg.Validate()
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", path, err)
			failed = true
			continue
		}
		out := cluster{File: path, Name: cfg.Name}
		for _, n := range cfg.Nodes {
			out.Nodes = append(out.Nodes, node{Role: string(n.Role), Image: n.Image, Labels: n.Labels})
		}
		if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	if failed {
		os.Exit(1)
	}
}
