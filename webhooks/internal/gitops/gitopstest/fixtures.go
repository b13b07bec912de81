package gitopstest

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Applied is when the tool last applied the guards' audit fixtures;
// Edited, an hour later, when someone changed them by hand.
var (
	Applied = time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	Edited  = Applied.Add(time.Hour)
)

// The kinds the guards' audit fixtures are of: two a guard's audit lists,
// and one it may not.
var (
	Deployments  = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	StatefulSets = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}
	ConfigMaps   = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
)

// ImageField is the web container's image and ReplicasField the replicas
// of a Deployment, as paths of fieldsV1 keys (Entry).
var (
	ImageField    = []string{"f:spec", "f:template", "f:spec", "f:containers", `k:{"name":"web"}`, "f:image"}
	ReplicasField = []string{"f:spec", "f:replicas"}
)
