// Package celtest evaluates a webhook's matchConditions the way the API
// server does, so rule tests can check that every request a rule acts on
// is one the API server sends, and that what the conditions drop is only
// what the rule would allow untouched.
//
// Like the API server, it declares object, oldObject and request as dynamic
// values: a condition that reads a missing field without has() errors here
// as it would there.
package celtest

import (
	"encoding/json"
	"fmt"

	"github.com/google/cel-go/cel"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

var env = mustEnv()

func mustEnv() *cel.Env {
	e, err := cel.NewEnv(
		cel.Variable("object", cel.DynType),
		cel.Variable("oldObject", cel.DynType),
		cel.Variable("request", cel.DynType),
	)
	if err != nil {
		panic(err)
	}
	return e
}

// Compile reports the first condition that does not compile.
func Compile(conds []admissionregistrationv1.MatchCondition) error {
	for _, c := range conds {
		if _, iss := env.Compile(c.Expression); iss.Err() != nil {
			return fmt.Errorf("matchCondition %s: %w", c.Name, iss.Err())
		}
	}
	return nil
}

// Sent reports whether the API server would send req to a webhook with
// these conditions: all must be true. An evaluation error is returned as
// is; the API server would apply the failure policy.
func Sent(conds []admissionregistrationv1.MatchCondition, req admission.Request) (bool, error) {
	vars, err := variables(req)
	if err != nil {
		return false, err
	}
	for _, c := range conds {
		ast, iss := env.Compile(c.Expression)
		if iss.Err() != nil {
			return false, fmt.Errorf("matchCondition %s: %w", c.Name, iss.Err())
		}
		prg, err := env.Program(ast)
		if err != nil {
			return false, fmt.Errorf("matchCondition %s: %w", c.Name, err)
		}
		out, _, err := prg.Eval(vars)
		if err != nil {
			return false, fmt.Errorf("matchCondition %s: %w", c.Name, err)
		}
		b, ok := out.Value().(bool)
		if !ok {
			return false, fmt.Errorf("matchCondition %s: result %v is not a bool", c.Name, out.Value())
		}
		if !b {
			return false, nil
		}
	}
	return true, nil
}

func variables(req admission.Request) (map[string]any, error) {
	object, err := decode(req.Object.Raw)
	if err != nil {
		return nil, fmt.Errorf("object: %w", err)
	}
	oldObject, err := decode(req.OldObject.Raw)
	if err != nil {
		return nil, fmt.Errorf("oldObject: %w", err)
	}
	r := req.AdmissionRequest
	r.Object.Raw, r.OldObject.Raw, r.Options.Raw = nil, nil, nil
	data, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	var request map[string]any
	if err := json.Unmarshal(data, &request); err != nil {
		return nil, err
	}
	return map[string]any{"object": object, "oldObject": oldObject, "request": request}, nil
}

func decode(raw []byte) (any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var v any
	err := json.Unmarshal(raw, &v)
	return v, err
}
