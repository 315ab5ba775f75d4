// gowait parks one goroutine on each of a channel receive, a select, a sync.Mutex and a
// time.Sleep, spins one, and parks main on a channel: TestGoroutines reads them from outside.
// It prints "ready" once every goroutine has been started; it never exits on its own.
package main

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

var (
	mu   sync.Mutex
	sink uint64
)

//go:noinline
func waitRecv(ch chan int) { <-ch }

//go:noinline
func waitSelect(a, b chan int) {
	select {
	case <-a:
	case <-b:
	}
}

//go:noinline
func waitMutex() { mu.Lock() }

//go:noinline
func waitSleep() { time.Sleep(time.Hour) }

//go:noinline
func spin() {
	for {
		atomic.AddUint64(&sink, 1) // a plain sink++ in an endless loop is compiled away
	}
}

func main() {
	mu.Lock()
	ch, a, b := make(chan int), make(chan int), make(chan int)
	go waitRecv(ch)
	go waitSelect(a, b)
	go waitMutex()
	go waitSleep()
	go spin()
	fmt.Println("ready")
	<-make(chan struct{})
}
