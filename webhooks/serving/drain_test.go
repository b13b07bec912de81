package serving_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/webhooks/serving"
)

// post sends a POST through c and reports whether it went over a
// connection used before, and whether the answer closes it (Connection:
// close, which Go's client reads into resp.Close and takes out of the
// header).
func post(t *testing.T, c *http.Client, url string) (reused, closes bool) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	req = req.WithContext(httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) { reused = info.Reused },
	}))
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	return reused, resp.Close
}

func TestDrainClosesEachConnectionAfterItsAnswerOnceBegun(t *testing.T) {
	var d serving.Drain
	srv := httptest.NewServer(d.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{}`))
	})))
	defer srv.Close()
	c := srv.Client()

	post(t, c, srv.URL)
	if reused, closes := post(t, c, srv.URL); !reused || closes {
		t.Fatalf("before the drain: reused %v, closes %v; want the connection kept alive", reused, closes)
	}
	d.Begin()
	if !d.Draining() {
		t.Fatal("Draining() is false after Begin")
	}
	if reused, closes := post(t, c, srv.URL); !reused || !closes {
		t.Errorf("the first answer of the drain: reused %v, closes %v; want the open connection answered, with Connection: close", reused, closes)
	}
	if reused, _ := post(t, c, srv.URL); reused {
		t.Error("the call after an answer with Connection: close went over the old connection; want a new one")
	}
}

func TestDrainClosesTheConnectionOfARequestInFlightWhenItBegins(t *testing.T) {
	var d serving.Drain
	arrived, begun := make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(d.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(arrived)
			<-begun
		}
		_, _ = w.Write([]byte(`{}`))
	})))
	defer srv.Close()
	go func() {
		<-arrived
		d.Begin()
		close(begun)
	}()
	if _, closes := post(t, srv.Client(), srv.URL+"/slow"); !closes {
		t.Error("a request that arrived before the drain and was answered during it kept its connection open; want Connection: close")
	}
}

func TestDrainOverHTTP2SendsGoAway(t *testing.T) {
	var d serving.Drain
	srv := httptest.NewUnstartedServer(d.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{}`))
	})))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	c := srv.Client()

	post(t, c, srv.URL)
	if reused, _ := post(t, c, srv.URL); !reused {
		t.Fatal("before the drain the HTTP/2 connection was not reused")
	}
	d.Begin()
	post(t, c, srv.URL)
	// The GOAWAY follows the answer; the client stops using the
	// connection once it has read it.
	deadline := time.Now().Add(5 * time.Second)
	for {
		if reused, _ := post(t, c, srv.URL); !reused {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("HTTP/2 calls keep going over the old connection after the drain began")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestDrainKeepsTheResponseControllerWorking(t *testing.T) {
	var d serving.Drain
	errs := make(chan error, 1)
	srv := httptest.NewServer(d.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		errs <- http.NewResponseController(w).SetReadDeadline(time.Now().Add(time.Minute))
		_, _ = w.Write([]byte(`{}`))
	})))
	defer srv.Close()
	post(t, srv.Client(), srv.URL)
	if err := <-errs; err != nil {
		t.Errorf("setting the body's read deadline through the drain's writer: %v", err)
	}
}
