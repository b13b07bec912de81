package manifests

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// defaultAPIServerPorts are the ports Steward reaches the API server on:
// 443, the kubernetes Service's, and 6443, where kubeadm's API servers
// listen (network policies see the endpoint's port, after the Service's
// translation, on most network plugins).
var defaultAPIServerPorts = []int32{443, 6443}

// networkPolicy lets into Steward's pods only what Steward serves, from
// anywhere (the API server's address is the cluster's, not a pod's): the
// webhook port, which the API server calls, and the metrics port, which
// Prometheus scrapes. Out of them it lets only connections to the API
// server's ports, which Steward needs for its caches, its Events, its
// reports and the reviews of metrics scrapers. Kubernetes always lets the
// kubelet's probes through. The Helm chart installs it when asked
// (networkPolicy.enabled), with the API server's ports as values.
func (in install) networkPolicy(apiServerPorts []int32) *networkingv1.NetworkPolicy {
	tcp := corev1.ProtocolTCP
	named := func(name string) networkingv1.NetworkPolicyPort {
		p := intstr.FromString(name)
		return networkingv1.NetworkPolicyPort{Protocol: &tcp, Port: &p}
	}
	var egress []networkingv1.NetworkPolicyPort
	for _, port := range apiServerPorts {
		p := intstr.FromInt32(port)
		egress = append(egress, networkingv1.NetworkPolicyPort{Protocol: &tcp, Port: &p})
	}
	return &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: in.meta(in.name),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: in.selectorLabels()},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			Ingress:     []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{named("webhook"), named("metrics")}}},
			Egress:      []networkingv1.NetworkPolicyEgressRule{{Ports: egress}},
		},
	}
}
