// mongobench-wireserver: a small in-memory MongoDB wire-protocol server for `make bench-clients`.
//
// It answers what the benchmark clients send (the YCSB binding and a bare loop on the Java
// driver, the Locust driver and a bare loop on pymongo) fast enough that the clients, not the
// server, are the bottleneck: OP_MSG (and OP_QUERY for a legacy handshake), a standalone that
// reports wire versions 0..21, one goroutine per connection, documents kept as raw BSON in
// per-collection maps. No authentication, no persistence, no secondary indexes. A command it does
// not know is logged to stderr and answered ok:0 (CommandNotFound).
//
// Usage: mongobench-wireserver [-port N]   (0 = any free port). Listens on 127.0.0.1 and prints
// "listening 127.0.0.1:PORT" on stdout once it accepts connections. On SIGTERM/SIGINT it prints
// the number of commands it served, by name, to stderr and exits.
package main

import (
	"bufio"
	"crypto/tls"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"go.mongodb.org/mongo-driver/x/bsonx/bsoncore"
)

const (
	opReply      = 1
	opQuery      = 2004
	opMsg        = 2013
	maxMessage   = 48_000_000
	maxBSON      = 16 * 1024 * 1024
	flagChecksum = 1 << 0
	flagMoreToGo = 1 << 1
)

func main() {
	port := flag.Int("port", 0, "TCP port on 127.0.0.1 (0: any free port)")
	certKeyFile := flag.String("tlsCertificateKeyFile", "",
		"PEM file with the certificate chain and key: TLS only (requireTLS) when given")
	flag.Parse()
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	log.SetPrefix("wireserver: ")

	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		log.Fatal(err)
	}
	srv := newServer()
	if *certKeyFile != "" {
		certs, err := loadCertificates(*certKeyFile)
		if err != nil {
			log.Fatal(err)
		}
		srv.certs = certs
		ln = tls.NewListener(ln, certs.config())
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sigs
		log.Printf("served %s", srv.stats.summary())
		os.Exit(0)
	}()
	fmt.Printf("listening %s\n", ln.Addr().String())
	for {
		nc, err := ln.Accept()
		if err != nil {
			log.Fatal(err)
		}
		go srv.serve(nc)
	}
}

type server struct {
	certs   *certificates // nil: plain TCP
	store   *store
	cursors *cursors
	conns   atomic.Int64
	stats   *stats
}

func newServer() *server {
	return &server{store: newStore(), cursors: newCursors(), stats: newStats()}
}

// conn is one client connection: its buffers are reused from message to message.
type conn struct {
	srv  *server
	id   int32
	addr string
	in   []byte
	out  []byte
}

func (s *server) serve(nc net.Conn) {
	defer func() { _ = nc.Close() }()
	c := &conn{srv: s, id: int32(s.conns.Add(1)), addr: nc.RemoteAddr().String()}
	r := bufio.NewReaderSize(nc, 64<<10)
	w := bufio.NewWriterSize(nc, 64<<10)
	var hdr [16]byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return
		}
		length := int(int32(binary.LittleEndian.Uint32(hdr[0:])))
		requestID := int32(binary.LittleEndian.Uint32(hdr[4:]))
		opCode := int32(binary.LittleEndian.Uint32(hdr[12:]))
		if length < 16 || length > maxMessage {
			log.Printf("connection %d: bad message length %d", c.id, length)
			return
		}
		if cap(c.in) < length-16 {
			c.in = make([]byte, length-16)
		}
		c.in = c.in[:length-16]
		if _, err := io.ReadFull(r, c.in); err != nil {
			return
		}
		// The reply: header (filled in below), then the op's own body.
		c.out = append(c.out[:0], zeroHeader[:]...)
		var replyOp int32
		var reply bool
		var err error
		switch opCode {
		case opMsg:
			replyOp = opMsg
			reply, err = c.opMsg()
		case opQuery:
			replyOp = opReply
			reply, err = c.opQuery()
		default:
			err = fmt.Errorf("unsupported opCode %d", opCode)
		}
		if err != nil {
			log.Printf("connection %d (%s): %v; closing it", c.id, c.addr, err)
			return
		}
		if !reply {
			continue
		}
		binary.LittleEndian.PutUint32(c.out[0:], uint32(len(c.out)))
		binary.LittleEndian.PutUint32(c.out[4:], uint32(s.nextRequestID()))
		binary.LittleEndian.PutUint32(c.out[8:], uint32(requestID))
		binary.LittleEndian.PutUint32(c.out[12:], uint32(replyOp))
		if _, err := w.Write(c.out); err != nil {
			return
		}
		if err := w.Flush(); err != nil {
			return
		}
		if cap(c.out) > 4<<20 { // do not keep a large find's buffer for the connection's life
			c.out = nil
		}
	}
}

var (
	requestIDs atomic.Int32
	zeroHeader [16]byte
)

func (s *server) nextRequestID() int32 { return requestIDs.Add(1) }

// opMsg parses an OP_MSG (flag bits, a kind-0 body, kind-1 document sequences, an optional
// checksum), runs the command and appends the reply's flag bits and body to c.out. It returns
// false when the client asked for no reply (moreToCome: unacknowledged writes).
func (c *conn) opMsg() (bool, error) {
	b := c.in
	if len(b) < 5 {
		return false, fmt.Errorf("short OP_MSG")
	}
	flags := binary.LittleEndian.Uint32(b)
	b = b[4:]
	if flags&flagChecksum != 0 {
		if len(b) < 4 {
			return false, fmt.Errorf("short OP_MSG checksum")
		}
		b = b[:len(b)-4]
	}
	cmd := command{}
	for len(b) > 0 {
		kind := b[0]
		b = b[1:]
		switch kind {
		case 0:
			doc, rest, ok := bsoncore.ReadDocument(b)
			if !ok {
				return false, fmt.Errorf("bad OP_MSG body section")
			}
			cmd.body, b = doc, rest
		case 1:
			if len(b) < 4 {
				return false, fmt.Errorf("short document sequence")
			}
			size := int(int32(binary.LittleEndian.Uint32(b)))
			if size < 5 || size > len(b) {
				return false, fmt.Errorf("bad document sequence size %d", size)
			}
			sec := b[4:size]
			b = b[size:]
			i := 0
			for i < len(sec) && sec[i] != 0 {
				i++
			}
			if i == len(sec) {
				return false, fmt.Errorf("document sequence without identifier")
			}
			s := sequence{id: string(sec[:i])}
			sec = sec[i+1:]
			for len(sec) > 0 {
				doc, rest, ok := bsoncore.ReadDocument(sec)
				if !ok {
					return false, fmt.Errorf("bad document in sequence %q", s.id)
				}
				s.docs = append(s.docs, doc)
				sec = rest
			}
			cmd.seqs = append(cmd.seqs, s)
		default:
			return false, fmt.Errorf("unknown OP_MSG section kind %d", kind)
		}
	}
	if cmd.body == nil {
		return false, fmt.Errorf("OP_MSG without a body section")
	}
	if v, err := cmd.body.LookupErr("$db"); err == nil {
		cmd.db, _ = v.StringValueOK()
	}
	c.out = binary.LittleEndian.AppendUint32(c.out, 0) // flag bits
	c.out = append(c.out, 0)                           // kind 0: the body
	c.out = c.run(&cmd, c.out)
	return flags&flagMoreToGo == 0, nil
}

// opQuery answers a command sent as OP_QUERY on DB.$cmd (the legacy handshake) with OP_REPLY.
func (c *conn) opQuery() (bool, error) {
	b := c.in
	if len(b) < 4 {
		return false, fmt.Errorf("short OP_QUERY")
	}
	b = b[4:] // flags
	i := 0
	for i < len(b) && b[i] != 0 {
		i++
	}
	if i == len(b) || len(b) < i+9 {
		return false, fmt.Errorf("bad OP_QUERY collection name")
	}
	ns := string(b[:i])
	b = b[i+1+8:] // numberToSkip, numberToReturn
	query, _, ok := bsoncore.ReadDocument(b)
	if !ok {
		return false, fmt.Errorf("bad OP_QUERY query document")
	}
	// responseFlags, cursorID, startingFrom, numberReturned
	c.out = binary.LittleEndian.AppendUint32(c.out, 0)
	c.out = binary.LittleEndian.AppendUint64(c.out, 0)
	c.out = binary.LittleEndian.AppendUint32(c.out, 0)
	c.out = binary.LittleEndian.AppendUint32(c.out, 1)
	db, coll, _ := strings.Cut(ns, ".")
	if coll != "$cmd" {
		idx, out := bsoncore.AppendDocumentStart(c.out)
		out = bsoncore.AppendStringElement(out, "$err", "OP_QUERY is only supported for commands")
		out = bsoncore.AppendInt32Element(out, "code", 352)
		c.out, _ = bsoncore.AppendDocumentEnd(out, idx)
		binary.LittleEndian.PutUint32(c.out[16:], 2) // QueryFailure
		return true, nil
	}
	if first, err := query.IndexErr(0); err == nil && first.Key() == "$query" {
		if inner, ok := first.Value().DocumentOK(); ok {
			query = inner
		}
	}
	cmd := command{body: query, db: db}
	c.out = c.run(&cmd, c.out)
	return true, nil
}

type sequence struct {
	id   string
	docs []bsoncore.Document
}

type command struct {
	body bsoncore.Document
	db   string
	seqs []sequence
}

// docs returns the documents of field: a kind-1 sequence of that name, else the body's array.
func (cmd *command) docs(field string) ([]bsoncore.Document, error) {
	for _, s := range cmd.seqs {
		if s.id == field {
			return s.docs, nil
		}
	}
	v, err := cmd.body.LookupErr(field)
	if err != nil {
		return nil, nil
	}
	arr, ok := v.ArrayOK()
	if !ok {
		return nil, fmt.Errorf("%s must be an array", field)
	}
	vals, err := arr.Values()
	if err != nil {
		return nil, err
	}
	out := make([]bsoncore.Document, 0, len(vals))
	for _, v := range vals {
		d, ok := v.DocumentOK()
		if !ok {
			return nil, fmt.Errorf("%s must hold documents", field)
		}
		out = append(out, d)
	}
	return out, nil
}

// stats counts commands by name.
type stats struct {
	counts sync.Map // name -> *atomic.Int64
}

func newStats() *stats { return &stats{} }

func (s *stats) inc(name string) {
	n, ok := s.counts.Load(name)
	if !ok {
		n, _ = s.counts.LoadOrStore(name, new(atomic.Int64))
	}
	n.(*atomic.Int64).Add(1)
}

func (s *stats) summary() string {
	var names []string
	var total int64
	s.counts.Range(func(k, v any) bool {
		names = append(names, k.(string))
		total += v.(*atomic.Int64).Load()
		return true
	})
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, k := range names {
		v, _ := s.counts.Load(k)
		parts = append(parts, fmt.Sprintf("%s=%d", k, v.(*atomic.Int64).Load()))
	}
	return fmt.Sprintf("%d commands: %s", total, strings.Join(parts, " "))
}
