// Package deploy holds what installs gitaso in a Kubernetes cluster: the Helm
// chart (helm/gitaso) and the plain manifests rendered from it
// (manifests/gitaso.yaml). It has no Go code of its own; its tests render the
// chart with the Helm SDK, check its security settings and RBAC, and apply
// every object to a real kube-apiserver with a server-side dry run
// (docs/deploy.md).
//
// After a change to the chart, regenerate the plain manifests:
//
//	go test -tags kustomize_disable_go_plugin_support ./deploy -run TestManifests -update
package deploy
