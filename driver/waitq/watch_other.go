//go:build unix && !linux

package waitq

// Event bits a watcher reports.
const (
	evHeld   = 1 << iota // the held file was closed: a release, or a holder died
	evTicket             // a ticket ahead left or its owner died
)

// watcher is nil here: without inotify, Wait polls at Poll, in queue order.
type watcher struct{}

func watch(string) *watcher                { return nil }
func (w *watcher) behind(string)           {}
func (w *watcher) events() <-chan struct{} { return nil }
func (w *watcher) take() uint8             { return 0 }
func (w *watcher) close()                  {}
