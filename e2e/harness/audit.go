package harness

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
)

// auditPolicy records every write at the Metadata level, which carries the
// audit annotations Steward's webhooks add (e.g. a break-glass override).
// Reads and the API server's own lease traffic are left out to keep the log
// small.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages:
- RequestReceived
rules:
- level: None
  verbs: ["get", "list", "watch"]
- level: None
  resources:
  - group: coordination.k8s.io
    resources: ["leases"]
- level: None
  resources:
  - group: ""
    resources: ["events"]
- level: Metadata
`

// AuditEvent is the part of an API server audit event (audit.k8s.io/v1
// Event) that tests look at.
type AuditEvent struct {
	AuditID          string            `json:"auditID"`
	Stage            string            `json:"stage"`
	Verb             string            `json:"verb"`
	RequestURI       string            `json:"requestURI"`
	User             AuditUser         `json:"user"`
	ImpersonatedUser *AuditUser        `json:"impersonatedUser,omitempty"`
	ObjectRef        *AuditObjectRef   `json:"objectRef,omitempty"`
	ResponseStatus   *AuditStatus      `json:"responseStatus,omitempty"`
	Annotations      map[string]string `json:"annotations,omitempty"`
	StageTimestamp   string            `json:"stageTimestamp,omitempty"`
}

// Writer is the user the API server authorized and admission saw: the
// impersonated user when the request impersonated one (Argo CD's syncs
// under sync impersonation, kubectl --as), else the authenticated one.
func (ev AuditEvent) Writer() string {
	if ev.ImpersonatedUser != nil {
		return ev.ImpersonatedUser.Username
	}
	return ev.User.Username
}

// AuditUser is the user an audit event names.
type AuditUser struct {
	Username string   `json:"username"`
	Groups   []string `json:"groups,omitempty"`
}

// AuditObjectRef is the object an audit event is about.
type AuditObjectRef struct {
	Resource    string `json:"resource,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
	Name        string `json:"name,omitempty"`
	APIGroup    string `json:"apiGroup,omitempty"`
	APIVersion  string `json:"apiVersion,omitempty"`
	Subresource string `json:"subresource,omitempty"`
}

// AuditStatus is the response code of an audited request.
type AuditStatus struct {
	Code    int32  `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

// AuditEvents returns the audit events that match (every event when match is
// nil), oldest first. Events are written when a request completes, so a test
// finds its own request's event as soon as the request has returned.
func (e *Env) AuditEvents(match func(AuditEvent) bool) ([]AuditEvent, error) {
	f, err := os.Open(e.AuditLog)
	if err != nil {
		return nil, fmt.Errorf("reading the audit log: %w", err)
	}
	defer f.Close()
	var events []AuditEvent
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for s.Scan() {
		var ev AuditEvent
		if err := json.Unmarshal(s.Bytes(), &ev); err != nil {
			return nil, fmt.Errorf("decoding the audit log: %w", err)
		}
		if match == nil || match(ev) {
			events = append(events, ev)
		}
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("reading the audit log: %w", err)
	}
	return events, nil
}
