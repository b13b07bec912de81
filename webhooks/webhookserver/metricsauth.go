package webhookserver

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// The metrics endpoint answers only clients the API server authenticates
// (a TokenReview of the bearer token) and authorizes (a SubjectAccessReview
// of get on the path), the way the kube-controller-manager's does. This is
// what controller-runtime's filters.WithAuthenticationAndAuthorization
// does; that one links k8s.io/apiserver's delegating authenticators, which
// nearly doubled Steward's binary (50 to 92 MB, most of it mapped into
// every replica's memory), for two API calls and a cache.

// Cache lifetimes, as controller-runtime's filter has them: a scraper
// costs two API calls every few minutes, and a revoked token or role stops
// working within a minute or five.
const (
	authnTTL      = time.Minute
	authzAllowTTL = 5 * time.Minute
	authzDenyTTL  = 30 * time.Second
	// reviewTimeout bounds one review; a scrape waits at most twice this.
	reviewTimeout = 10 * time.Second
	// maxCached bounds each cache: a client sending endless distinct
	// forged tokens must not grow Steward's memory.
	maxCached = 1024
)

// metricsAuthFilter is a metricsserver.FilterProvider.
func metricsAuthFilter(cfg *rest.Config, hc *http.Client) (metricsserver.Filter, error) {
	cs, err := kubernetes.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("metrics authentication client: %w", err)
	}
	a := &metricsAuth{client: cs, users: newTTLCache[authenticationv1.UserInfo](), decisions: newTTLCache[bool]()}
	return a.filter, nil
}

type metricsAuth struct {
	client    kubernetes.Interface
	users     *ttlCache[authenticationv1.UserInfo] // by SHA-256 of the token
	decisions *ttlCache[bool]                      // by user and path
}

func (a *metricsAuth) filter(log logr.Logger, next http.Handler) (http.Handler, error) {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || token == "" {
			http.Error(w, "Unauthorized: a bearer token is required", http.StatusUnauthorized)
			return
		}
		user, ok, err := a.authenticate(r.Context(), token)
		if err != nil {
			log.Error(err, "reviewing a metrics client's token")
			http.Error(w, "the API server could not review the token", http.StatusServiceUnavailable)
			return
		}
		if !ok {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		allowed, err := a.authorize(r.Context(), user, strings.ToLower(r.Method), r.URL.Path)
		if err != nil {
			log.Error(err, "reviewing a metrics client's access", "user", user.Username)
			http.Error(w, "the API server could not review the access", http.StatusServiceUnavailable)
			return
		}
		if !allowed {
			http.Error(w, fmt.Sprintf("Forbidden: %s may not get %s", user.Username, r.URL.Path), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	}), nil
}

// authenticate asks the API server who the token belongs to.
func (a *metricsAuth) authenticate(ctx context.Context, token string) (authenticationv1.UserInfo, bool, error) {
	sum := sha256.Sum256([]byte(token))
	key := string(sum[:])
	if u, ok := a.users.get(key); ok {
		return u, u.Username != "", nil
	}
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	tr, err := a.client.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return authenticationv1.UserInfo{}, false, err
	}
	user := authenticationv1.UserInfo{}
	if tr.Status.Authenticated {
		user = tr.Status.User
	}
	a.users.put(key, user, authnTTL)
	return user, user.Username != "", nil
}

// authorize asks the API server whether user may verb path.
func (a *metricsAuth) authorize(ctx context.Context, user authenticationv1.UserInfo, verb, path string) (bool, error) {
	key := user.Username + "\x00" + user.UID + "\x00" + strings.Join(user.Groups, "\x00") + "\x00" + verb + " " + path
	if allowed, ok := a.decisions.get(key); ok {
		return allowed, nil
	}
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range user.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	sar, err := a.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user.Username, UID: user.UID, Groups: user.Groups, Extra: extra,
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb},
	}}, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	ttl := authzDenyTTL
	if sar.Status.Allowed {
		ttl = authzAllowTTL
	}
	a.decisions.put(key, sar.Status.Allowed, ttl)
	return sar.Status.Allowed, nil
}

// ttlCache keeps answers until they expire, at most maxCached of them: a
// full cache is emptied rather than searched for the oldest entry, which
// costs a few API calls at worst.
type ttlCache[V any] struct {
	mu      sync.Mutex
	entries map[string]ttlEntry[V]
}

type ttlEntry[V any] struct {
	value   V
	expires time.Time
}

func newTTLCache[V any]() *ttlCache[V] {
	return &ttlCache[V]{entries: map[string]ttlEntry[V]{}}
}

func (c *ttlCache[V]) get(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || time.Now().After(e.expires) {
		var zero V
		return zero, false
	}
	return e.value, true
}

func (c *ttlCache[V]) put(key string, v V, ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= maxCached {
		clear(c.entries)
	}
	c.entries[key] = ttlEntry[V]{value: v, expires: time.Now().Add(ttl)}
}
