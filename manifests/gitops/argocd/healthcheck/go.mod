module mongobench.io/argocd-health

go 1.26

require (
	github.com/yuin/gopher-lua v1.1.2
	sigs.k8s.io/yaml v1.6.0
)

require go.yaml.in/yaml/v2 v2.4.2 // indirect
