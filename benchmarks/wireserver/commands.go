package main

import (
	"errors"
	"fmt"
	"log"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/x/bsonx/bsoncore"
)

const (
	maxWireVersion   = 21 // MongoDB 7.0
	defaultFirstSize = 101
	batchBytes       = maxBSON - 1<<20 // room for the reply's envelope
)

var errNotFound = errors.New("command not found")

// run executes cmd and appends its reply document to out.
func (c *conn) run(cmd *command, out []byte) []byte {
	first, err := cmd.body.IndexErr(0)
	if err != nil {
		return appendError(out, 9, "FailedToParse", "empty command document")
	}
	name := first.Key()
	c.srv.stats.inc(name)
	start := len(out)
	out, err = c.dispatch(name, first.Value(), cmd, out)
	if err == nil {
		return out
	}
	out = out[:start]
	var ue *updateError
	switch {
	case errors.Is(err, errNotFound):
		body := cmd.body.String()
		if len(body) > 600 {
			body = body[:600] + "..."
		}
		log.Printf("unknown command %q (db %q): %s", name, cmd.db, body)
		return appendError(out, 59, "CommandNotFound", fmt.Sprintf("no such command: '%s'", name))
	case errors.As(err, &ue):
		return appendError(out, ue.code, ue.name, ue.msg)
	}
	log.Printf("command %q failed: %v", name, err)
	return appendError(out, 2, "BadValue", err.Error())
}

func (c *conn) dispatch(name string, arg bsoncore.Value, cmd *command, out []byte) ([]byte, error) {
	switch name {
	case "hello", "isMaster", "ismaster":
		return c.hello(name, out), nil
	case "rotateCertificates":
		return c.rotateCertificates(out), nil
	case "ping", "endSessions", "refreshSessions", "logout":
		return appendOK(out), nil
	case "buildInfo", "buildinfo":
		return buildInfo(out), nil
	case "getParameter":
		return getParameter(out), nil
	case "whatsmyuri":
		return doc(out, func(b []byte) []byte {
			b = bsoncore.AppendStringElement(b, "you", c.addr)
			return bsoncore.AppendDoubleElement(b, "ok", 1)
		}), nil
	case "connectionStatus":
		return doc(out, func(b []byte) []byte {
			i, b := bsoncore.AppendDocumentElementStart(b, "authInfo")
			b = emptyArray(b, "authenticatedUsers")
			b = emptyArray(b, "authenticatedUserRoles")
			b, _ = bsoncore.AppendDocumentEnd(b, i)
			return bsoncore.AppendDoubleElement(b, "ok", 1)
		}), nil
	}
	coll, _ := arg.StringValueOK()
	ns := cmd.db + "." + coll
	switch name {
	case "insert":
		return c.insert(ns, cmd, out)
	case "find":
		return c.find(ns, cmd, out)
	case "getMore":
		return c.getMore(arg, cmd, out)
	case "killCursors":
		return c.killCursors(cmd, out)
	case "update":
		return c.update(ns, cmd, out)
	case "delete":
		return c.delete(ns, cmd, out)
	case "count":
		return c.count(ns, cmd, out)
	case "drop":
		col, ok := c.srv.store.drop(ns)
		if ok {
			c.srv.cursors.dropNamespace(ns)
		}
		return doc(out, func(b []byte) []byte {
			b = bsoncore.AppendStringElement(b, "ns", ns)
			if col != nil {
				b = bsoncore.AppendInt32Element(b, "nIndexesWas", int32(1+len(col.indexes)))
			}
			return bsoncore.AppendDoubleElement(b, "ok", 1)
		}), nil
	case "dropDatabase":
		c.srv.store.dropDatabase(cmd.db)
		return doc(out, func(b []byte) []byte {
			b = bsoncore.AppendStringElement(b, "dropped", cmd.db)
			return bsoncore.AppendDoubleElement(b, "ok", 1)
		}), nil
	case "create":
		if _, created := c.srv.store.create(ns); !created {
			return appendError(out, 48, "NamespaceExists", "Collection "+ns+" already exists."), nil
		}
		return appendOK(out), nil
	case "createIndexes":
		return c.createIndexes(ns, cmd, out)
	case "listIndexes":
		return c.listIndexes(ns, coll, out)
	case "listCollections":
		return c.listCollections(cmd, out)
	case "listDatabases":
		return c.listDatabases(out), nil
	}
	return out, errNotFound
}

// doc appends one document whose elements fill writes.
func doc(out []byte, fill func([]byte) []byte) []byte {
	idx, out := bsoncore.AppendDocumentStart(out)
	out = fill(out)
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return out
}

func appendOK(out []byte) []byte {
	return doc(out, func(b []byte) []byte { return bsoncore.AppendDoubleElement(b, "ok", 1) })
}

func appendError(out []byte, code int32, codeName, msg string) []byte {
	return doc(out, func(b []byte) []byte {
		b = bsoncore.AppendDoubleElement(b, "ok", 0)
		b = bsoncore.AppendStringElement(b, "errmsg", msg)
		b = bsoncore.AppendInt32Element(b, "code", code)
		return bsoncore.AppendStringElement(b, "codeName", codeName)
	})
}

func emptyArray(b []byte, key string) []byte {
	i, b := bsoncore.AppendArrayElementStart(b, key)
	b, _ = bsoncore.AppendArrayEnd(b, i)
	return b
}

var indexKeys = func() []string {
	k := make([]string, 1024)
	for i := range k {
		k[i] = strconv.Itoa(i)
	}
	return k
}()

func arrayKey(i int) string {
	if i < len(indexKeys) {
		return indexKeys[i]
	}
	return strconv.Itoa(i)
}

func (c *conn) hello(name string, out []byte) []byte {
	return doc(out, func(b []byte) []byte {
		b = bsoncore.AppendBooleanElement(b, "helloOk", true)
		if name == "hello" {
			b = bsoncore.AppendBooleanElement(b, "isWritablePrimary", true)
		} else {
			b = bsoncore.AppendBooleanElement(b, "ismaster", true)
		}
		b = bsoncore.AppendInt32Element(b, "maxBsonObjectSize", maxBSON)
		b = bsoncore.AppendInt32Element(b, "maxMessageSizeBytes", maxMessage)
		b = bsoncore.AppendInt32Element(b, "maxWriteBatchSize", 100000)
		b = bsoncore.AppendDateTimeElement(b, "localTime", time.Now().UnixMilli())
		b = bsoncore.AppendInt32Element(b, "logicalSessionTimeoutMinutes", 30)
		b = bsoncore.AppendInt32Element(b, "connectionId", c.id)
		b = bsoncore.AppendInt32Element(b, "minWireVersion", 0)
		b = bsoncore.AppendInt32Element(b, "maxWireVersion", maxWireVersion)
		b = bsoncore.AppendBooleanElement(b, "readOnly", false)
		return bsoncore.AppendDoubleElement(b, "ok", 1)
	})
}

func buildInfo(out []byte) []byte {
	return doc(out, func(b []byte) []byte {
		b = bsoncore.AppendStringElement(b, "version", "7.0.0")
		b = bsoncore.AppendStringElement(b, "gitVersion", "mongobench-wireserver")
		i, b := bsoncore.AppendArrayElementStart(b, "versionArray")
		for j, v := range []int32{7, 0, 0, 0} {
			b = bsoncore.AppendInt32Element(b, arrayKey(j), v)
		}
		b, _ = bsoncore.AppendArrayEnd(b, i)
		b = bsoncore.AppendInt32Element(b, "bits", 64)
		b = bsoncore.AppendInt32Element(b, "maxBsonObjectSize", maxBSON)
		return bsoncore.AppendDoubleElement(b, "ok", 1)
	})
}

func getParameter(out []byte) []byte {
	return doc(out, func(b []byte) []byte {
		i, b := bsoncore.AppendDocumentElementStart(b, "featureCompatibilityVersion")
		b = bsoncore.AppendStringElement(b, "version", "7.0")
		b, _ = bsoncore.AppendDocumentEnd(b, i)
		return bsoncore.AppendDoubleElement(b, "ok", 1)
	})
}

func boolOpt(cmd *command, key string, def bool) bool {
	v, err := cmd.body.LookupErr(key)
	if err != nil {
		return def
	}
	return truthy(v)
}

func intOpt(cmd *command, key string) (int64, bool) {
	v, err := cmd.body.LookupErr(key)
	if err != nil || !v.IsNumber() {
		return 0, false
	}
	return int64(numberOf(v)), true
}

func docOpt(cmd *command, key string) bsoncore.Document {
	v, err := cmd.body.LookupErr(key)
	if err != nil {
		return nil
	}
	d, _ := v.DocumentOK()
	return d
}

type writeError struct {
	index int
	code  int32
	msg   string
}

func appendWriteErrors(b []byte, errs []writeError) []byte {
	if len(errs) == 0 {
		return b
	}
	i, b := bsoncore.AppendArrayElementStart(b, "writeErrors")
	for j, we := range errs {
		k, bb := bsoncore.AppendDocumentElementStart(b, arrayKey(j))
		bb = bsoncore.AppendInt32Element(bb, "index", int32(we.index))
		bb = bsoncore.AppendInt32Element(bb, "code", we.code)
		bb = bsoncore.AppendStringElement(bb, "errmsg", we.msg)
		b, _ = bsoncore.AppendDocumentEnd(bb, k)
	}
	b, _ = bsoncore.AppendArrayEnd(b, i)
	return b
}

func toWriteError(i int, err error) writeError {
	var ue *updateError
	if errors.As(err, &ue) {
		return writeError{i, ue.code, ue.msg}
	}
	return writeError{i, 2, err.Error()}
}

func (c *conn) insert(ns string, cmd *command, out []byte) ([]byte, error) {
	docs, err := cmd.docs("documents")
	if err != nil {
		return out, err
	}
	ordered := boolOpt(cmd, "ordered", true)
	col, _ := c.srv.store.create(ns)
	n := 0
	var errs []writeError
	// Copy and key the documents before taking the lock.
	type keyed struct {
		key string
		doc bsoncore.Document
		err error
	}
	prepared := make([]keyed, len(docs))
	for i, d := range docs {
		nd, id, err := withID(d)
		prepared[i] = keyed{doc: nd, err: err}
		if err == nil {
			prepared[i].key = idKey(id)
		}
	}
	col.mu.Lock()
	for i, p := range prepared {
		if p.err != nil {
			errs = append(errs, toWriteError(i, p.err))
		} else if _, dup := col.docs[p.key]; dup {
			errs = append(errs, writeError{i, 11000, fmt.Sprintf(
				"E11000 duplicate key error collection: %s index: _id_ dup key: { _id: %s }",
				ns, keyValue(p.key).String())})
		} else {
			col.docs[p.key] = p.doc
			col.dirty = true
			n++
			continue
		}
		if ordered {
			break
		}
	}
	col.mu.Unlock()
	return doc(out, func(b []byte) []byte {
		b = bsoncore.AppendInt32Element(b, "n", int32(n))
		b = appendWriteErrors(b, errs)
		return bsoncore.AppendDoubleElement(b, "ok", 1)
	}), nil
}

// query returns the documents of ns matching filter, sorted, skipped and limited (limit 0: all).
func (c *conn) query(ns string, filter, sortSpec bsoncore.Document, skip, limit int) ([]bsoncore.Document, error) {
	m, err := compileFilter(filter)
	if err != nil {
		return nil, &updateError{2, "BadValue", err.Error()}
	}
	col := c.srv.store.get(ns)
	if col == nil {
		return nil, nil
	}
	if m.id != nil {
		col.mu.RLock()
		d, ok := col.docs[idKey(*m.id)]
		col.mu.RUnlock()
		if !ok || !m.match(d) || skip > 0 {
			return nil, nil
		}
		return []bsoncore.Document{d}, nil
	}
	byID, reverse := true, false
	if len(sortSpec) > 5 {
		es, _ := sortSpec.Elements()
		byID = len(es) == 1 && es[0].Key() == "_id"
		reverse = byID && numberOf(es[0].Value()) < 0
	}
	stop := 0
	if byID && !reverse && limit > 0 {
		stop = skip + limit
	}
	docs := col.snapshot(m.match, stop)
	switch {
	case reverse:
		for i, j := 0, len(docs)-1; i < j; i, j = i+1, j-1 {
			docs[i], docs[j] = docs[j], docs[i]
		}
	case !byID:
		sortDocs(docs, sortSpec)
	}
	if skip >= len(docs) {
		return nil, nil
	}
	docs = docs[skip:]
	if limit > 0 && limit < len(docs) {
		docs = docs[:limit]
	}
	return docs, nil
}

func (c *conn) find(ns string, cmd *command, out []byte) ([]byte, error) {
	skip, _ := intOpt(cmd, "skip")
	limit, _ := intOpt(cmd, "limit")
	single := boolOpt(cmd, "singleBatch", false)
	if limit < 0 {
		limit, single = -limit, true
	}
	docs, err := c.query(ns, docOpt(cmd, "filter"), docOpt(cmd, "sort"), int(skip), int(limit))
	if err != nil {
		return out, err
	}
	if proj := docOpt(cmd, "projection"); len(proj) > 5 {
		for i, d := range docs {
			docs[i] = project(d, proj)
		}
	}
	batch := int64(defaultFirstSize)
	if bs, ok := intOpt(cmd, "batchSize"); ok && bs >= 0 {
		batch = bs
	}
	return c.cursorReply(out, ns, docs, int(batch), single, "firstBatch", 0), nil
}

// cursorReply appends {cursor: {<field>: docs[:batch], id, ns}, ok: 1} (batch < 0: all, within
// 16 MiB), keeping the rest in cursor id (0: a new one) unless single.
func (c *conn) cursorReply(out []byte, ns string, docs []bsoncore.Document, batch int, single bool, field string, id int64) []byte {
	return doc(out, func(b []byte) []byte {
		i, b := bsoncore.AppendDocumentElementStart(b, "cursor")
		j, b := bsoncore.AppendArrayElementStart(b, field)
		n, size := 0, 0
		for n < len(docs) && (batch < 0 || n < batch) && (n == 0 || size+len(docs[n]) <= batchBytes) {
			b = bsoncore.AppendDocumentElement(b, arrayKey(n), docs[n])
			size += len(docs[n])
			n++
		}
		b, _ = bsoncore.AppendArrayEnd(b, j)
		var cid int64
		if n < len(docs) && !single {
			cid = c.srv.cursors.put(id, ns, docs[n:])
		}
		b = bsoncore.AppendInt64Element(b, "id", cid)
		b = bsoncore.AppendStringElement(b, "ns", ns)
		b, _ = bsoncore.AppendDocumentEnd(b, i)
		return bsoncore.AppendDoubleElement(b, "ok", 1)
	})
}

func (c *conn) getMore(arg bsoncore.Value, cmd *command, out []byte) ([]byte, error) {
	id, ok := arg.Int64OK()
	if !ok {
		return out, &updateError{14, "TypeMismatch", "getMore needs a long cursor id"}
	}
	cur := c.srv.cursors.take(id)
	if cur == nil {
		return appendError(out, 43, "CursorNotFound", fmt.Sprintf("cursor id %d not found", id)), nil
	}
	batch, _ := intOpt(cmd, "batchSize")
	if batch <= 0 {
		batch = -1
	}
	return c.cursorReply(out, cur.ns, cur.docs, int(batch), false, "nextBatch", id), nil
}

func (c *conn) killCursors(cmd *command, out []byte) ([]byte, error) {
	v, err := cmd.body.LookupErr("cursors")
	if err != nil {
		return out, fmt.Errorf("killCursors needs cursors")
	}
	arr, _ := v.ArrayOK()
	vals, _ := arr.Values()
	var killed, missing []int64
	for _, x := range vals {
		id, _ := x.Int64OK()
		if c.srv.cursors.take(id) != nil {
			killed = append(killed, id)
		} else {
			missing = append(missing, id)
		}
	}
	ids := func(b []byte, key string, xs []int64) []byte {
		i, b := bsoncore.AppendArrayElementStart(b, key)
		for j, x := range xs {
			b = bsoncore.AppendInt64Element(b, arrayKey(j), x)
		}
		b, _ = bsoncore.AppendArrayEnd(b, i)
		return b
	}
	return doc(out, func(b []byte) []byte {
		b = ids(b, "cursorsKilled", killed)
		b = ids(b, "cursorsNotFound", missing)
		b = emptyArray(b, "cursorsAlive")
		b = emptyArray(b, "cursorsUnknown")
		return bsoncore.AppendDoubleElement(b, "ok", 1)
	}), nil
}

type upserted struct {
	index int
	id    bsoncore.Value
}

func (c *conn) update(ns string, cmd *command, out []byte) ([]byte, error) {
	ups, err := cmd.docs("updates")
	if err != nil {
		return out, err
	}
	ordered := boolOpt(cmd, "ordered", true)
	col, _ := c.srv.store.create(ns)
	var matched, modified int
	var errs []writeError
	var inserted []upserted
	for i, spec := range ups {
		n, nmod, up, err := c.updateOne(col, spec)
		matched += n
		modified += nmod
		if up != nil {
			inserted = append(inserted, upserted{i, *up})
		}
		if err != nil {
			errs = append(errs, toWriteError(i, err))
			if ordered {
				break
			}
		}
	}
	return doc(out, func(b []byte) []byte {
		b = bsoncore.AppendInt32Element(b, "n", int32(matched+len(inserted)))
		b = bsoncore.AppendInt32Element(b, "nModified", int32(modified))
		if len(inserted) > 0 {
			i, bb := bsoncore.AppendArrayElementStart(b, "upserted")
			for j, u := range inserted {
				k, bbb := bsoncore.AppendDocumentElementStart(bb, arrayKey(j))
				bbb = bsoncore.AppendInt32Element(bbb, "index", int32(u.index))
				bbb = bsoncore.AppendValueElement(bbb, "_id", u.id)
				bb, _ = bsoncore.AppendDocumentEnd(bbb, k)
			}
			b, _ = bsoncore.AppendArrayEnd(bb, i)
		}
		b = appendWriteErrors(b, errs)
		return bsoncore.AppendDoubleElement(b, "ok", 1)
	}), nil
}

// updateOne applies one update statement {q, u, upsert, multi}; it returns the matched and
// modified counts and, for an upsert that inserted, the new _id.
func (c *conn) updateOne(col *collection, spec bsoncore.Document) (int, int, *bsoncore.Value, error) {
	q, _ := lookup(spec, "q").DocumentOK()
	uv := lookup(spec, "u")
	u, ok := uv.DocumentOK()
	if !ok {
		return 0, 0, nil, &updateError{9, "FailedToParse", "update pipelines are not supported"}
	}
	upsert := truthy(lookup(spec, "upsert"))
	multi := truthy(lookup(spec, "multi"))
	m, err := compileFilter(q)
	if err != nil {
		return 0, 0, nil, &updateError{2, "BadValue", err.Error()}
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	var keys []string
	if m.id != nil {
		k := idKey(*m.id)
		if d, ok := col.docs[k]; ok && m.match(d) {
			keys = append(keys, k)
		}
	} else {
		for _, k := range col.sortedLocked() {
			if m.match(col.docs[k]) {
				keys = append(keys, k)
				if !multi {
					break
				}
			}
		}
	}
	if len(keys) == 0 {
		if !upsert {
			return 0, 0, nil, nil
		}
		nd, err := applyUpdate(upsertSeed(m, u), u, true)
		if err != nil {
			return 0, 0, nil, err
		}
		id, _ := nd.LookupErr("_id")
		k := idKey(id)
		if _, dup := col.docs[k]; dup {
			return 0, 0, nil, &updateError{11000, "DuplicateKey", "E11000 duplicate key error (upsert)"}
		}
		col.docs[k] = nd
		col.dirty = true
		return 0, 0, &id, nil
	}
	modified := 0
	for _, k := range keys {
		old := col.docs[k]
		nd, err := applyUpdate(old, u, false)
		if err != nil {
			return len(keys), modified, nil, err
		}
		if string(nd) != string(old) {
			col.docs[k] = nd
			modified++
		}
	}
	return len(keys), modified, nil, nil
}

func (c *conn) delete(ns string, cmd *command, out []byte) ([]byte, error) {
	dels, err := cmd.docs("deletes")
	if err != nil {
		return out, err
	}
	col := c.srv.store.get(ns)
	n := 0
	var errs []writeError
	for i, spec := range dels {
		q, _ := lookup(spec, "q").DocumentOK()
		one := numberOf(lookup(spec, "limit")) == 1
		m, err := compileFilter(q)
		if err != nil {
			errs = append(errs, writeError{i, 2, err.Error()})
			if boolOpt(cmd, "ordered", true) {
				break
			}
			continue
		}
		if col == nil {
			continue
		}
		col.mu.Lock()
		if m.id != nil {
			k := idKey(*m.id)
			if d, ok := col.docs[k]; ok && m.match(d) {
				delete(col.docs, k)
				col.dirty = true
				n++
			}
		} else {
			for _, k := range col.sortedLocked() {
				if d, ok := col.docs[k]; ok && m.match(d) {
					delete(col.docs, k)
					col.dirty = true
					n++
					if one {
						break
					}
				}
			}
		}
		col.mu.Unlock()
	}
	return doc(out, func(b []byte) []byte {
		b = bsoncore.AppendInt32Element(b, "n", int32(n))
		b = appendWriteErrors(b, errs)
		return bsoncore.AppendDoubleElement(b, "ok", 1)
	}), nil
}

func (c *conn) count(ns string, cmd *command, out []byte) ([]byte, error) {
	skip, _ := intOpt(cmd, "skip")
	limit, _ := intOpt(cmd, "limit")
	if limit < 0 {
		limit = -limit
	}
	var n int
	q := docOpt(cmd, "query")
	if len(q) <= 5 && skip == 0 && limit == 0 {
		if col := c.srv.store.get(ns); col != nil {
			col.mu.RLock()
			n = len(col.docs)
			col.mu.RUnlock()
		}
	} else {
		docs, err := c.query(ns, q, nil, int(skip), int(limit))
		if err != nil {
			return out, err
		}
		n = len(docs)
	}
	return doc(out, func(b []byte) []byte {
		b = bsoncore.AppendInt32Element(b, "n", int32(n))
		return bsoncore.AppendDoubleElement(b, "ok", 1)
	}), nil
}

func (c *conn) createIndexes(ns string, cmd *command, out []byte) ([]byte, error) {
	specs, err := cmd.docs("indexes")
	if err != nil {
		return out, err
	}
	col, created := c.srv.store.create(ns)
	col.mu.Lock()
	before := 1 + len(col.indexes)
	for _, s := range specs {
		name, _ := lookup(s, "name").StringValueOK()
		if name == "_id_" {
			continue
		}
		dup := false
		for _, have := range col.indexes {
			if hn, _ := lookup(have, "name").StringValueOK(); hn == name {
				dup = true
			}
		}
		if !dup {
			col.indexes = append(col.indexes, bsoncore.Document(append([]byte(nil), s...)))
		}
	}
	after := 1 + len(col.indexes)
	col.mu.Unlock()
	return doc(out, func(b []byte) []byte {
		b = bsoncore.AppendBooleanElement(b, "createdCollectionAutomatically", created)
		b = bsoncore.AppendInt32Element(b, "numIndexesBefore", int32(before))
		b = bsoncore.AppendInt32Element(b, "numIndexesAfter", int32(after))
		return bsoncore.AppendDoubleElement(b, "ok", 1)
	}), nil
}

func idIndex() bsoncore.Document {
	return doc(nil, func(b []byte) []byte {
		b = bsoncore.AppendInt32Element(b, "v", 2)
		i, b := bsoncore.AppendDocumentElementStart(b, "key")
		b = bsoncore.AppendInt32Element(b, "_id", 1)
		b, _ = bsoncore.AppendDocumentEnd(b, i)
		return bsoncore.AppendStringElement(b, "name", "_id_")
	})
}

func (c *conn) listIndexes(ns, coll string, out []byte) ([]byte, error) {
	col := c.srv.store.get(ns)
	if col == nil {
		return appendError(out, 26, "NamespaceNotFound", "ns does not exist: "+ns), nil
	}
	col.mu.RLock()
	docs := append([]bsoncore.Document{idIndex()}, col.indexes...)
	col.mu.RUnlock()
	return c.cursorReply(out, ns, docs, -1, true, "firstBatch", 0), nil
}

func (c *conn) listCollections(cmd *command, out []byte) ([]byte, error) {
	m, err := compileFilter(docOpt(cmd, "filter"))
	if err != nil {
		return out, err
	}
	prefix := cmd.db + "."
	var docs []bsoncore.Document
	for _, ns := range c.srv.store.names(prefix) {
		name := strings.TrimPrefix(ns, prefix)
		d := doc(nil, func(b []byte) []byte {
			b = bsoncore.AppendStringElement(b, "name", name)
			b = bsoncore.AppendStringElement(b, "type", "collection")
			i, b := bsoncore.AppendDocumentElementStart(b, "options")
			b, _ = bsoncore.AppendDocumentEnd(b, i)
			i, b = bsoncore.AppendDocumentElementStart(b, "info")
			b = bsoncore.AppendBooleanElement(b, "readOnly", false)
			b, _ = bsoncore.AppendDocumentEnd(b, i)
			return bsoncore.AppendDocumentElement(b, "idIndex", idIndex())
		})
		if m.match(d) {
			docs = append(docs, d)
		}
	}
	return c.cursorReply(out, cmd.db+".$cmd.listCollections", docs, -1, true, "firstBatch", 0), nil
}

func (c *conn) listDatabases(out []byte) []byte {
	seen := map[string]bool{}
	var dbs []string
	for _, ns := range c.srv.store.names("") {
		db, _, _ := strings.Cut(ns, ".")
		if !seen[db] {
			seen[db] = true
			dbs = append(dbs, db)
		}
	}
	return doc(out, func(b []byte) []byte {
		i, b := bsoncore.AppendArrayElementStart(b, "databases")
		for j, db := range dbs {
			k, bb := bsoncore.AppendDocumentElementStart(b, arrayKey(j))
			bb = bsoncore.AppendStringElement(bb, "name", db)
			bb = bsoncore.AppendInt64Element(bb, "sizeOnDisk", 0)
			bb = bsoncore.AppendBooleanElement(bb, "empty", false)
			b, _ = bsoncore.AppendDocumentEnd(bb, k)
		}
		b, _ = bsoncore.AppendArrayEnd(b, i)
		b = bsoncore.AppendInt64Element(b, "totalSize", 0)
		return bsoncore.AppendDoubleElement(b, "ok", 1)
	})
}

// cursors: the open cursors of every connection (a getMore may come on another connection).
type cursors struct {
	mu   sync.Mutex
	next atomic.Int64
	open map[int64]*cursor
}

type cursor struct {
	ns   string
	docs []bsoncore.Document
	at   time.Time
}

func newCursors() *cursors {
	c := &cursors{open: map[int64]*cursor{}}
	c.next.Store(time.Now().UnixNano() & (1<<40 - 1))
	go c.reap()
	return c
}

// put stores documents still to return under cursor id (0: a new id) and returns the id.
func (cs *cursors) put(id int64, ns string, docs []bsoncore.Document) int64 {
	if id == 0 {
		id = cs.next.Add(1)
	}
	cs.mu.Lock()
	cs.open[id] = &cursor{ns: ns, docs: docs, at: time.Now()}
	cs.mu.Unlock()
	return id
}

// take removes and returns a cursor (a getMore that leaves documents opens it again).
func (cs *cursors) take(id int64) *cursor {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	c := cs.open[id]
	delete(cs.open, id)
	return c
}

func (cs *cursors) dropNamespace(ns string) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for id, c := range cs.open {
		if c.ns == ns {
			delete(cs.open, id)
		}
	}
}

// reap closes cursors idle for 10 minutes, as mongod does.
func (cs *cursors) reap() {
	for range time.Tick(time.Minute) {
		cs.mu.Lock()
		for id, c := range cs.open {
			if time.Since(c.at) > 10*time.Minute {
				delete(cs.open, id)
			}
		}
		cs.mu.Unlock()
	}
}

// rotateCertificates re-reads the certificate file (mongod's command of the same name): ok:1
// once new handshakes present it; without TLS, or when the file cannot be used, an error and
// the certificate in use stays.
func (c *conn) rotateCertificates(out []byte) []byte {
	if c.srv.certs == nil {
		return appendError(out, 2, "BadValue", "rotateCertificates: the server runs without TLS")
	}
	if err := c.srv.certs.reload(); err != nil {
		return appendError(out, 2, "BadValue", "rotateCertificates: "+err.Error())
	}
	log.Printf("connection %d: certificates rotated from %s", c.id, c.srv.certs.file)
	return appendOK(out)
}
