package manifests

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/stewardhq/steward/webhooks/config"
)

// Ports and paths the Deployment, Service and probes agree on.
const (
	webhookPort = 9443
	metricsPort = 8443
	healthPort  = 8081
	certDir     = "/tmp/k8s-webhook-server/serving-certs"
	configDir   = "/etc/steward"
	replicas    = 3
	runAsUser   = 65532 // the distroless "nonroot" user
	// On SIGTERM a replica reports unready and keeps serving for
	// shutdownDelay, closing each connection after its answer; then it
	// closes its listener and drains, all within shutdownTimeout (the
	// connections left get up to shutdownDelay again to carry a last
	// call). The kubelet's SIGKILL comes shutdownSecs after SIGTERM:
	// later than both, with time to stop the rest. e2e/ha runs three
	// replicas with these settings through rolling upgrades, drains and
	// crashes under load (docs/reliability.md).
	shutdownDelay   = "5s"
	shutdownTimeout = "25s"
	shutdownSecs    = 40
)

// The labels every object carries, and the one the selectors match.
const (
	nameLabel     = "app.kubernetes.io/name"
	partOfLabel   = "app.kubernetes.io/part-of"
	instanceLabel = "app.kubernetes.io/instance"
)

// selectorLabels select the install's pods. An install named Name selects
// them by app.kubernetes.io/name alone, as every install did before the
// name could change (a Deployment's selector cannot change); any other
// also by app.kubernetes.io/instance, so two installs in one namespace do
// not select each other's pods.
func (in install) selectorLabels() map[string]string {
	sel := map[string]string{nameLabel: Name}
	if in.name != Name {
		sel[instanceLabel] = in.name
	}
	return sel
}

func (in install) labels() map[string]string {
	l := in.selectorLabels()
	l[partOfLabel] = Name
	return l
}

func (in install) meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: in.ns, Labels: in.labels()}
}

// configName is the ConfigMap holding Steward's configuration file.
func (in install) configName() string { return in.name + "-config" }

// secretName is the Secret holding the serving certificate, filled by
// cert-manager or by Steward itself in self-managed mode.
func (in install) secretName() string { return in.name + "-serving-cert" }

func (in install) namespace() *corev1.Namespace {
	return &corev1.Namespace{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: in.ns, Labels: in.labels()},
	}
}

func (in install) serviceAccount() *corev1.ServiceAccount {
	return &corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: in.meta(in.name),
	}
}

// configMap ships the default configuration, spelled out, so operators edit
// a complete file instead of guessing the defaults.
func (in install) configMap(cfg config.Config) *corev1.ConfigMap {
	data, err := yaml.Marshal(cfg)
	if err != nil {
		panic(err) // a Config always marshals; a failure is a programming error
	}
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: in.meta(in.configName()),
		Data:       map[string]string{"config.yaml": string(data)},
	}
}

func (in install) service() *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: in.meta(in.name),
		Spec: corev1.ServiceSpec{
			Selector: in.selectorLabels(),
			Ports: []corev1.ServicePort{
				{Name: "webhook", Port: 443, TargetPort: intstr.FromString("webhook")},
				{Name: "metrics", Port: metricsPort, TargetPort: intstr.FromString("metrics")},
			},
		},
	}
}

func (in install) podDisruptionBudget() *policyv1.PodDisruptionBudget {
	one := intstr.FromInt32(1)
	return &policyv1.PodDisruptionBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
		ObjectMeta: in.meta(in.name),
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: &one,
			Selector:       &metav1.LabelSelector{MatchLabels: in.selectorLabels()},
		},
	}
}

func (in install) deployment() *appsv1.Deployment {
	podLabels := in.labels()
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: in.meta(in.name),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(replicas)),
			Selector: &metav1.LabelSelector{MatchLabels: in.selectorLabels()},
			Strategy: appsv1.DeploymentStrategy{
				Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{
					MaxUnavailable: ptr.To(intstr.FromInt32(1)),
					MaxSurge:       ptr.To(intstr.FromInt32(1)),
				},
			},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec:       in.podSpec(),
			},
		},
	}
}

func (in install) podSpec() corev1.PodSpec {
	return corev1.PodSpec{
		ServiceAccountName: in.name,
		// Admission is on the path of every guarded write: Steward is as
		// critical as the control plane it protects.
		PriorityClassName:             "system-cluster-critical",
		TerminationGracePeriodSeconds: ptr.To(int64(shutdownSecs)),
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot:   ptr.To(true),
			RunAsUser:      ptr.To(int64(runAsUser)),
			RunAsGroup:     ptr.To(int64(runAsUser)),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		TopologySpreadConstraints: []corev1.TopologySpreadConstraint{
			in.spread("kubernetes.io/hostname", corev1.DoNotSchedule),
			in.spread("topology.kubernetes.io/zone", corev1.ScheduleAnyway),
		},
		Containers: []corev1.Container{in.container()},
		Volumes: []corev1.Volume{
			{Name: "serving-cert", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: in.secretName()}}},
			{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: in.configName()},
			}}},
		},
	}
}

func (in install) spread(key string, when corev1.UnsatisfiableConstraintAction) corev1.TopologySpreadConstraint {
	return corev1.TopologySpreadConstraint{
		MaxSkew:           1,
		TopologyKey:       key,
		WhenUnsatisfiable: when,
		LabelSelector:     &metav1.LabelSelector{MatchLabels: in.selectorLabels()},
	}
}

func (in install) container() corev1.Container {
	return corev1.Container{
		Name:  Name,
		Image: in.image,
		Args: []string{
			"serve",
			"--config=" + configDir + "/config.yaml",
			"--cert-dir=" + certDir,
			"--port=9443",
			"--metrics-bind-address=:8443",
			"--health-probe-bind-address=:8081",
			"--shutdown-delay=" + shutdownDelay,
			"--shutdown-timeout=" + shutdownTimeout,
			"--keep-registration",
		},
		Env: []corev1.EnvVar{
			{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{
				FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"},
			}},
			// Steward records Events about its configuration file (a
			// refused reload) on its own Pod.
			{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{
				FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"},
			}},
			{Name: "POD_UID", ValueFrom: &corev1.EnvVarSource{
				FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.uid"},
			}},
			// Steward sets Go's soft memory limit from the container's, so
			// raising the limit for a larger cluster raises both.
			{Name: "MEMORY_LIMIT", ValueFrom: &corev1.EnvVarSource{
				ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1")},
			}},
		},
		Ports: []corev1.ContainerPort{
			{Name: "webhook", ContainerPort: webhookPort},
			{Name: "metrics", ContainerPort: metricsPort},
			{Name: "health", ContainerPort: healthPort},
		},
		// No CPU limit: throttling an admission webhook turns into API
		// server timeouts. Memory is bounded.
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("100m"),
				corev1.ResourceMemory: resource.MustParse("64Mi"),
			},
			Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
		},
		ReadinessProbe: probe("/readyz", 5),
		LivenessProbe:  probe("/healthz", 15),
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			ReadOnlyRootFilesystem:   ptr.To(true),
			RunAsNonRoot:             ptr.To(true),
			Privileged:               ptr.To(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "serving-cert", MountPath: certDir, ReadOnly: true},
			{Name: "config", MountPath: configDir, ReadOnly: true},
		},
	}
}

func probe(path string, period int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: path, Port: intstr.FromString("health"),
		}},
		PeriodSeconds:    period,
		FailureThreshold: 3,
	}
}
