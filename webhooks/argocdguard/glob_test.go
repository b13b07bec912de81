package argocdguard

import "testing"

func TestPattern(t *testing.T) {
	cases := map[string]struct {
		reason  string
		pattern string
		match   []string
		noMatch []string
	}{
		"Literal":             {reason: "A name without special characters is itself.", pattern: "apps", match: []string{"apps"}, noMatch: []string{"", "app", "apps.v1", "Apps"}},
		"CoreGroup":           {reason: "The empty group is the core group only.", pattern: "", match: []string{""}, noMatch: []string{"apps"}},
		"Star":                {reason: "* is every group or kind, the core group's included.", pattern: "*", match: []string{"", "apps", "rbac.authorization.k8s.io"}},
		"DoubleStar":          {reason: "Without separators ** is *.", pattern: "**", match: []string{"", "a.b/c"}},
		"Prefix":              {reason: "* matches any rest.", pattern: "Deploy*", match: []string{"Deploy", "Deployment"}, noMatch: []string{"StatefulSet", "ADeployment"}},
		"Suffix":              {reason: "A dot is a dot, not any character.", pattern: "*.k8s.io", match: []string{"rbac.authorization.k8s.io"}, noMatch: []string{"apps", "k8sxio"}},
		"Question":            {reason: "? is one character.", pattern: "Rol?", match: []string{"Role"}, noMatch: []string{"Rol", "Roles"}},
		"Class":               {reason: "A class matches one of its characters or ranges.", pattern: "[A-Z]ob", match: []string{"Job"}, noMatch: []string{"job", "Jobs"}},
		"NegatedClass":        {reason: "[!...] matches a character outside the class.", pattern: "[!C]*Job", match: []string{"XJob", "BatchJob"}, noMatch: []string{"CronJob"}},
		"Alternatives":        {reason: "{a,b} matches either.", pattern: "{apps,extensions}", match: []string{"apps", "extensions"}, noMatch: []string{"", "apps,extensions", "batch"}},
		"NestedAlternatives":  {reason: "Alternatives hold patterns.", pattern: "{Deploy*,Stateful{Set,Sets}}", match: []string{"Deployment", "StatefulSet"}, noMatch: []string{"DaemonSet"}},
		"Escape":              {reason: "\\ makes the next character literal.", pattern: `a\*`, match: []string{"a*"}, noMatch: []string{"ab"}},
		"RegexpCharacters":    {reason: "Characters special to regular expressions are literal.", pattern: "a+b|c(*)", match: []string{"a+b|c()", "a+b|c(x)"}, noMatch: []string{"aab"}},
		"UnclosedClass":       {reason: "A glob that does not compile matches nothing, as Argo CD logs and skips it.", pattern: "[apps", noMatch: []string{"[apps", "apps", "a"}},
		"EmptyClass":          {reason: "An empty class does not compile.", pattern: "[]", noMatch: []string{"[]", ""}},
		"UnclosedAlternative": {reason: "An unclosed alternative does not compile.", pattern: "{apps", noMatch: []string{"{apps", "apps"}},
		"TrailingEscape":      {reason: "A trailing escape does not compile.", pattern: `apps\`, noMatch: []string{`apps\`, "apps"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := newPattern(tc.pattern)
			for _, s := range tc.match {
				if !p.match(s) {
					t.Errorf("%s\n%q does not match %q", tc.reason, tc.pattern, s)
				}
			}
			for _, s := range tc.noMatch {
				if p.match(s) {
					t.Errorf("%s\n%q matches %q", tc.reason, tc.pattern, s)
				}
			}
		})
	}
}
