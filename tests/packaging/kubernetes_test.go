package packaging

import (
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/lockstepdb/lockstep/internal/testutil/proctest"
)

// decodeStrict decodes one YAML document into out as the API server's strict field
// validation would: an unknown or duplicate field is an error (sigs.k8s.io/yaml turns
// the YAML into JSON and decodes it with DisallowUnknownFields).
func decodeStrict(t *testing.T, file string, doc []byte, out any) {
	t.Helper()
	if err := yaml.UnmarshalStrict(doc, out); err != nil {
		t.Fatalf("%s: does not decode into %T: %v", file, out, err)
	}
}

// documents splits a YAML stream at its "---" lines.
func documents(data []byte) [][]byte {
	var out [][]byte
	for _, d := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1) {
		if strings.TrimSpace(regexp.MustCompile(`(?m)^#.*$`).ReplaceAllString(d, "")) != "" {
			out = append(out, []byte(d))
		}
	}
	return out
}

// expandEnv expands the $(VAR) references of a container argument as the kubelet does,
// from vars; an undefined one is an error.
func expandEnv(t *testing.T, arg string, vars map[string]string) string {
	t.Helper()
	return regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`).ReplaceAllStringFunc(arg, func(ref string) string {
		name := ref[2 : len(ref)-1]
		v, ok := vars[name]
		if !ok {
			t.Errorf("argument %q refers to $(%s), which the container's env does not define", arg, name)
		}
		return v
	})
}

// TestKubernetes checks deploy/kubernetes/ against the Kubernetes API types and the
// binary: the StatefulSet and the Services decode strictly into appsv1.StatefulSet and
// corev1.Service; the StatefulSet's service is headless and publishes pods before they
// are ready; selectors select the pods; for each pod (its name substituted as the
// kubelet would), the node's arguments use only flags of `lockstep node` and pass
// --check-config, it advertises its own stable DNS name and is in its --bootstrap list;
// the probes call /healthz and /readyz over plain HTTP on the port of --probe-addr; each
// named port is the port of a listen flag; every volume mount names a volume or a claim
// template, the data directory is on the claim and the certificates come from a secret;
// the pod runs as the image's non-root user.
func TestKubernetes(t *testing.T) {
	bin := proctest.BuildBinary(t)
	var sts appsv1.StatefulSet
	decodeStrict(t, "statefulset.yaml", readFile(t, "deploy/kubernetes/statefulset.yaml"), &sts)
	services := map[string]corev1.Service{}
	for i, doc := range documents(readFile(t, "deploy/kubernetes/service.yaml")) {
		var svc corev1.Service
		decodeStrict(t, fmt.Sprintf("service.yaml document %d", i), doc, &svc)
		if svc.APIVersion != "v1" || svc.Kind != "Service" {
			t.Errorf("service.yaml document %d: %s %s, want v1 Service", i, svc.APIVersion, svc.Kind)
		}
		services[svc.Name] = svc
	}
	if sts.APIVersion != "apps/v1" || sts.Kind != "StatefulSet" {
		t.Fatalf("statefulset.yaml: %s %s, want apps/v1 StatefulSet", sts.APIVersion, sts.Kind)
	}
	spec := sts.Spec
	headless, ok := services[spec.ServiceName]
	if !ok || headless.Spec.ClusterIP != corev1.ClusterIPNone || !headless.Spec.PublishNotReadyAddresses {
		t.Errorf("serviceName %q: want a headless service (clusterIP None) that publishes not-ready pods, got %+v", spec.ServiceName, headless.Spec)
	}
	podLabels := spec.Template.Labels
	selects := func(sel map[string]string) bool {
		for k, v := range sel {
			if podLabels[k] != v {
				return false
			}
		}
		return len(sel) > 0
	}
	if spec.Selector == nil || !selects(spec.Selector.MatchLabels) {
		t.Errorf("the StatefulSet's selector %v does not select its pods %v", spec.Selector, podLabels)
	}
	for name, svc := range services {
		if !selects(svc.Spec.Selector) {
			t.Errorf("service %s selects %v, not the pods %v", name, svc.Spec.Selector, podLabels)
		}
	}
	if spec.Replicas == nil || *spec.Replicas != 3 || spec.PodManagementPolicy != appsv1.ParallelPodManagement {
		t.Errorf("replicas %v, policy %q: want 3 started in parallel (they bootstrap together)", spec.Replicas, spec.PodManagementPolicy)
	}
	pod := spec.Template.Spec
	if sc := pod.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil ||
		strconv.FormatInt(*sc.RunAsUser, 10) != dockerUID || sc.FSGroup == nil {
		t.Errorf("pod securityContext %+v: want runAsNonRoot as the image's uid %s, with an fsGroup", sc, dockerUID)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	if c.Image != image {
		t.Errorf("image %q, want %s", c.Image, image)
	}
	if len(c.Command) != 0 {
		t.Errorf("command %q replaces the image's entrypoint %s", c.Command, binPath)
	}

	// Volumes: every mount has a volume or a claim; data on the claim, certs from a secret.
	claims := map[string]bool{}
	for _, pvc := range spec.VolumeClaimTemplates {
		claims[pvc.Name] = true
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range c.VolumeMounts {
		if _, ok := volumes[m.Name]; !ok && !claims[m.Name] {
			t.Errorf("volume mount %s at %s: no such volume or claim template", m.Name, m.MountPath)
		}
		mounts[m.MountPath] = m
	}
	mountOf := func(path string) (corev1.VolumeMount, bool) {
		for p, m := range mounts {
			if under(path, p) {
				return m, true
			}
		}
		return corev1.VolumeMount{}, false
	}

	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	vars := map[string]string{}
	for i := range *spec.Replicas {
		podName := fmt.Sprintf("%s-%d", sts.Name, i)
		for _, e := range c.Env {
			switch {
			case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
				vars[e.Name] = podName
			case e.ValueFrom == nil:
				vars[e.Name] = e.Value
			}
		}
		args := make([]string, len(c.Args))
		for j, a := range c.Args {
			args[j] = expandEnv(t, a, vars)
		}
		what := "pod " + podName
		checkFlags(t, bin, what, args)
		out := checkConfig(t, bin, what, args)
		if id, _ := flagValue(args, "id"); id != podName {
			t.Errorf("%s: --id %q, want the pod's name", what, id)
		}
		dns := podName + "." + spec.ServiceName
		adv := map[string]string{}
		for _, kind := range []string{"raft", "client", "admin"} {
			a, _ := flagValue(args, kind+"-advertise")
			host, port, _ := net.SplitHostPort(a)
			if host != dns {
				t.Errorf("%s: --%s-advertise %q, want the pod's DNS name %s", what, kind, a, dns)
			}
			listen, _ := flagValue(args, kind+"-listen")
			if _, lp, _ := net.SplitHostPort(listen); lp != port || strconv.Itoa(int(ports[kind])) != lp {
				t.Errorf("%s: %s listens on %q, advertises %q, container port %q is %d", what, kind, listen, a, kind, ports[kind])
			}
			if !strings.Contains(out, kind) {
				t.Errorf("%s: --check-config says nothing of %s:\n%s", what, kind, out)
			}
			adv[kind] = a
		}
		bootstrap, _ := flagValue(args, "bootstrap")
		if !slices.Contains(strings.Split(bootstrap, ","), podName+"="+adv["raft"]+"="+adv["client"]) {
			t.Errorf("%s: --bootstrap %q lacks %s=%s=%s", what, bootstrap, podName, adv["raft"], adv["client"])
		}
		if i == 0 {
			data, _ := flagValue(args, "data")
			if m, ok := mountOf(data); !ok || !claims[m.Name] || m.MountPath != dataMount || m.ReadOnly {
				t.Errorf("--data %s: want it on a claim template's writable mount at %s, got %+v", data, dataMount, m)
			}
			dir, _ := flagValue(args, "certs-dir")
			if m, ok := mountOf(dir); !ok || volumes[m.Name].Secret == nil || m.MountPath != certsMount || !m.ReadOnly {
				t.Errorf("--certs-dir %s: want it on a read-only secret volume at %s, got %+v", dir, certsMount, m)
			}
			probe, _ := flagValue(args, "probe-addr")
			_, probePort, _ := net.SplitHostPort(probe)
			for kind, p := range map[string]*corev1.Probe{"startup": c.StartupProbe, "liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
				want := "/healthz"
				if kind == "readiness" {
					want = "/readyz"
				}
				if p == nil || p.HTTPGet == nil {
					t.Errorf("%s probe: want an httpGet probe, got %+v", kind, p)
					continue
				}
				g := p.HTTPGet
				port := g.Port.IntVal
				if g.Port.StrVal != "" {
					port = ports[g.Port.StrVal]
				}
				if g.Path != want || strconv.Itoa(int(port)) != probePort || (g.Scheme != "" && g.Scheme != corev1.URISchemeHTTP) {
					t.Errorf("%s probe %+v: want plain HTTP %s on the probe port %s", kind, g, want, probePort)
				}
			}
		}
	}
	for name, svc := range services {
		for _, p := range svc.Spec.Ports {
			if _, ok := ports[p.TargetPort.StrVal]; !ok || ports[p.TargetPort.StrVal] != p.Port {
				t.Errorf("service %s port %s: target %q is not a container port of the same number (%v)", name, p.Name, p.TargetPort.String(), ports)
			}
		}
	}
}
