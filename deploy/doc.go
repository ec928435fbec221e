// Package deploy holds no code: its tests check what deploys Allot, the
// container image's Dockerfile (at the repository's root, with its
// .dockerignore) and the Kubernetes manifests under deploy/kubernetes, so
// that a change to the binary that breaks them fails here, on a machine
// without Docker or a cluster (docs/deploy.md).
package deploy
