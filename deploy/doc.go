// Package deploy holds the deployment recipes (container image, Kubernetes manifests, systemd
// units, Grafana dashboard and Prometheus alert rules) and the tests that keep them honest:
// every manifest decodes strictly into the Kubernetes API types, every embedded configuration
// passes `queryflux config check`, and every metric the dashboard and the alerts use exists.
//
// It has no code of its own; its tests read files and run the freshly built binary.
package deploy
