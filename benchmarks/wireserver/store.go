package main

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/bson/bsontype"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/x/bsonx/bsoncore"
)

// store: collections by namespace ("db.coll"). Stored documents are immutable byte slices (an
// update stores a new one), so a reader may copy one out after releasing the lock.
type store struct {
	mu    sync.RWMutex
	colls map[string]*collection
}

type collection struct {
	mu      sync.RWMutex
	docs    map[string]bsoncore.Document // idKey(_id) -> document
	order   []string                     // keys in _id order, rebuilt when dirty
	dirty   bool
	indexes []bsoncore.Document // specs from createIndexes (not maintained: no secondary indexes)
}

func newStore() *store { return &store{colls: map[string]*collection{}} }

func (s *store) get(ns string) *collection {
	s.mu.RLock()
	c := s.colls[ns]
	s.mu.RUnlock()
	return c
}

// create returns the collection, creating it when missing (and reporting that it did).
func (s *store) create(ns string) (*collection, bool) {
	if c := s.get(ns); c != nil {
		return c, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.colls[ns]; c != nil {
		return c, false
	}
	c := &collection{docs: map[string]bsoncore.Document{}}
	s.colls[ns] = c
	return c, true
}

func (s *store) drop(ns string) (*collection, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.colls[ns]
	delete(s.colls, ns)
	return c, ok
}

func (s *store) dropDatabase(db string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ns := range s.colls {
		if strings.HasPrefix(ns, db+".") {
			delete(s.colls, ns)
		}
	}
}

// names returns the namespaces under prefix ("" for all), sorted.
func (s *store) names(prefix string) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]string, 0, len(s.colls))
	for ns := range s.colls {
		if strings.HasPrefix(ns, prefix) {
			out = append(out, ns)
		}
	}
	sort.Strings(out)
	return out
}

// sorted returns the collection's keys in _id order; the caller holds c.mu (read or write).
// A stale order is rebuilt under the write lock: sortedLocked may only be called with it held.
func (c *collection) sortedLocked() []string {
	if c.dirty || len(c.order) != len(c.docs) {
		c.order = c.order[:0]
		for k := range c.docs {
			c.order = append(c.order, k)
		}
		sort.Slice(c.order, func(i, j int) bool {
			return compare(keyValue(c.order[i]), keyValue(c.order[j])) < 0
		})
		c.dirty = false
	}
	return c.order
}

// snapshot returns the documents in _id order (under the read lock, the write lock taken once to
// rebuild a stale order).
func (c *collection) snapshot(keep func(bsoncore.Document) bool, stopAfter int) []bsoncore.Document {
	c.mu.RLock()
	if c.dirty || len(c.order) != len(c.docs) {
		c.mu.RUnlock()
		c.mu.Lock()
		c.sortedLocked()
		c.mu.Unlock()
		c.mu.RLock()
	}
	defer c.mu.RUnlock()
	var out []bsoncore.Document
	for _, k := range c.order {
		d, ok := c.docs[k]
		if !ok || !keep(d) {
			continue
		}
		out = append(out, d)
		if stopAfter > 0 && len(out) >= stopAfter {
			break
		}
	}
	return out
}

// idKey is the map key of an _id value: its BSON type and bytes, numbers normalised so that
// 1, 1L and 1.0 are the same key.
func idKey(v bsoncore.Value) string {
	switch v.Type {
	case bsontype.Int32, bsontype.Int64, bsontype.Double:
		f := numberOf(v)
		if f == math.Trunc(f) && math.Abs(f) < 1<<62 {
			return string(bsoncore.AppendInt64([]byte{byte(bsontype.Int64)}, int64(f)))
		}
		return string(bsoncore.AppendDouble([]byte{byte(bsontype.Double)}, f))
	}
	return string(v.Type) + string(v.Data)
}

func keyValue(k string) bsoncore.Value {
	return bsoncore.Value{Type: bsontype.Type(k[0]), Data: []byte(k[1:])}
}

func numberOf(v bsoncore.Value) float64 {
	switch v.Type {
	case bsontype.Int32:
		return float64(v.Int32())
	case bsontype.Int64:
		return float64(v.Int64())
	case bsontype.Double:
		return v.Double()
	}
	return math.NaN()
}

// typeRank orders BSON types as MongoDB compares them across types.
func typeRank(t bsontype.Type) int {
	switch t {
	case bsontype.MinKey:
		return 1
	case 0, bsontype.Null, bsontype.Undefined:
		return 2
	case bsontype.Int32, bsontype.Int64, bsontype.Double, bsontype.Decimal128:
		return 3
	case bsontype.String, bsontype.Symbol:
		return 4
	case bsontype.EmbeddedDocument:
		return 5
	case bsontype.Array:
		return 6
	case bsontype.Binary:
		return 7
	case bsontype.ObjectID:
		return 8
	case bsontype.Boolean:
		return 9
	case bsontype.DateTime:
		return 10
	case bsontype.Timestamp:
		return 11
	case bsontype.Regex:
		return 12
	case bsontype.MaxKey:
		return 13
	}
	return 14
}

// compare orders two values as MongoDB does for the types a benchmark uses (numbers across their
// types, strings bytewise; documents, arrays and the rest by their bytes).
func compare(a, b bsoncore.Value) int {
	ra, rb := typeRank(a.Type), typeRank(b.Type)
	if ra != rb {
		if ra < rb {
			return -1
		}
		return 1
	}
	switch ra {
	case 2:
		return 0
	case 3:
		if a.Type == bsontype.Int64 && b.Type == bsontype.Int64 {
			x, y := a.Int64(), b.Int64()
			switch {
			case x < y:
				return -1
			case x > y:
				return 1
			}
			return 0
		}
		x, y := numberOf(a), numberOf(b)
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	case 4:
		return strings.Compare(stringOf(a), stringOf(b))
	case 9:
		return boolInt(a.Boolean()) - boolInt(b.Boolean())
	case 10:
		x, y := a.DateTime(), b.DateTime()
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	case 11:
		at, ai := a.Timestamp()
		bt, bi := b.Timestamp()
		x, y := uint64(at)<<32|uint64(ai), uint64(bt)<<32|uint64(bi)
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	}
	return bytes.Compare(a.Data, b.Data)
}

func stringOf(v bsoncore.Value) string {
	if v.Type == bsontype.Symbol {
		return v.Symbol()
	}
	return v.StringValue()
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// lookup returns the value at a dotted path, or a zero Value (type 0: missing).
func lookup(d bsoncore.Document, path string) bsoncore.Value {
	var v bsoncore.Value
	var err error
	if strings.IndexByte(path, '.') < 0 {
		v, err = d.LookupErr(path)
	} else {
		v, err = d.LookupErr(strings.Split(path, ".")...)
	}
	if err != nil {
		return bsoncore.Value{}
	}
	return v
}

// matcher: a compiled filter, the conjunction of field conditions.
type matcher struct {
	conds []cond
	id    *bsoncore.Value // the _id an equality condition pins, for a direct lookup
}

type cond struct {
	path string
	op   string // $eq $ne $gt $gte $lt $lte $in $nin $exists
	val  bsoncore.Value
}

func compileFilter(f bsoncore.Document) (*matcher, error) {
	m := &matcher{}
	if len(f) == 0 {
		return m, nil
	}
	if err := m.add(f); err != nil {
		return nil, err
	}
	for i := range m.conds {
		if m.conds[i].path == "_id" && m.conds[i].op == "$eq" {
			m.id = &m.conds[i].val
			break
		}
	}
	return m, nil
}

func (m *matcher) add(f bsoncore.Document) error {
	elems, err := f.Elements()
	if err != nil {
		return err
	}
	for _, e := range elems {
		key, val := e.Key(), e.Value()
		if key == "$and" {
			arr, ok := val.ArrayOK()
			if !ok {
				return fmt.Errorf("$and must be an array")
			}
			vals, _ := arr.Values()
			for _, v := range vals {
				d, ok := v.DocumentOK()
				if !ok {
					return fmt.Errorf("$and must hold documents")
				}
				if err := m.add(d); err != nil {
					return err
				}
			}
			continue
		}
		if strings.HasPrefix(key, "$") {
			return fmt.Errorf("unsupported query operator %s", key)
		}
		if d, ok := val.DocumentOK(); ok && isOperatorDoc(d) {
			ops, _ := d.Elements()
			for _, o := range ops {
				switch o.Key() {
				case "$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists":
					m.conds = append(m.conds, cond{path: key, op: o.Key(), val: o.Value()})
				default:
					return fmt.Errorf("unsupported query operator %s", o.Key())
				}
			}
			continue
		}
		m.conds = append(m.conds, cond{path: key, op: "$eq", val: val})
	}
	return nil
}

func isOperatorDoc(d bsoncore.Document) bool {
	e, err := d.IndexErr(0)
	return err == nil && strings.HasPrefix(e.Key(), "$")
}

func (m *matcher) match(d bsoncore.Document) bool {
	for _, c := range m.conds {
		if !c.match(lookup(d, c.path)) {
			return false
		}
	}
	return true
}

func (c cond) match(v bsoncore.Value) bool {
	switch c.op {
	case "$eq":
		return compare(v, c.val) == 0
	case "$ne":
		return compare(v, c.val) != 0
	case "$exists":
		return (v.Type != 0) == truthy(c.val)
	case "$in", "$nin":
		in := false
		if arr, ok := c.val.ArrayOK(); ok {
			vals, _ := arr.Values()
			for _, x := range vals {
				if compare(v, x) == 0 {
					in = true
					break
				}
			}
		}
		return in == (c.op == "$in")
	}
	if v.Type == 0 || typeRank(v.Type) != typeRank(c.val.Type) {
		return false // range operators compare within one type bracket only
	}
	r := compare(v, c.val)
	switch c.op {
	case "$gt":
		return r > 0
	case "$gte":
		return r >= 0
	case "$lt":
		return r < 0
	case "$lte":
		return r <= 0
	}
	return false
}

func truthy(v bsoncore.Value) bool {
	switch v.Type {
	case bsontype.Boolean:
		return v.Boolean()
	case bsontype.Int32, bsontype.Int64, bsontype.Double:
		return numberOf(v) != 0
	case 0, bsontype.Null, bsontype.Undefined:
		return false
	}
	return true
}

// equalities returns the filter's top-level equality conditions (the seed of an upsert).
func (m *matcher) equalities() []cond {
	var out []cond
	for _, c := range m.conds {
		if c.op == "$eq" && !strings.Contains(c.path, ".") {
			out = append(out, c)
		}
	}
	return out
}

var oidCounter atomic.Uint32

var oidProcess = func() [5]byte {
	var b [5]byte
	_, _ = rand.Read(b[:])
	return b
}()

func newObjectID() primitive.ObjectID {
	var id primitive.ObjectID
	binary.BigEndian.PutUint32(id[0:], uint32(time.Now().Unix()))
	copy(id[4:9], oidProcess[:])
	n := oidCounter.Add(1)
	id[9], id[10], id[11] = byte(n>>16), byte(n>>8), byte(n)
	return id
}

// withID returns doc with an _id first: doc itself (copied) when it has one, else a new
// ObjectId prepended. The copy matters: doc points into the connection's read buffer.
func withID(doc bsoncore.Document) (bsoncore.Document, bsoncore.Value, error) {
	if err := doc.Validate(); err != nil {
		return nil, bsoncore.Value{}, err
	}
	if v, err := doc.LookupErr("_id"); err == nil {
		if v.Type == bsontype.Array || v.Type == bsontype.Regex || v.Type == bsontype.Undefined {
			return nil, v, fmt.Errorf("can't use a %s for _id", v.Type)
		}
		out := bsoncore.Document(bytes.Clone(doc))
		id, _ := out.LookupErr("_id")
		return out, id, nil
	}
	idx, out := bsoncore.AppendDocumentStart(make([]byte, 0, len(doc)+17))
	out = bsoncore.AppendObjectIDElement(out, "_id", newObjectID())
	out = append(out, doc[4:len(doc)-1]...)
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	d := bsoncore.Document(out)
	id, _ := d.LookupErr("_id")
	return d, id, nil
}

// updateError is a write error with its server code.
type updateError struct {
	code int32
	name string
	msg  string
}

func (e *updateError) Error() string { return e.msg }

// applyUpdate returns old with update u applied: an operator document ($set, $unset, $inc,
// $setOnInsert on an upsert's insert) on top-level fields, or a replacement that keeps old's _id.
func applyUpdate(old, u bsoncore.Document, inserting bool) (bsoncore.Document, error) {
	oldID, hasID := old.LookupErr("_id")
	if !isOperatorDoc(u) {
		if v, err := u.LookupErr("_id"); err == nil && hasID == nil && compare(v, oldID) != 0 {
			return nil, &updateError{66, "ImmutableField", "the (immutable) field '_id' was found to have been altered"}
		}
		idx, out := bsoncore.AppendDocumentStart(make([]byte, 0, len(u)+len(oldID.Data)+8))
		if hasID == nil {
			out = bsoncore.AppendValueElement(out, "_id", oldID)
		}
		elems, err := u.Elements()
		if err != nil {
			return nil, err
		}
		for _, e := range elems {
			if e.Key() == "_id" && hasID == nil {
				continue
			}
			out = append(out, e...)
		}
		out, _ = bsoncore.AppendDocumentEnd(out, idx)
		return out, nil
	}
	type fieldOp struct {
		op   string
		val  bsoncore.Value
		done bool
	}
	ops := map[string]*fieldOp{}
	var order []string
	groups, err := u.Elements()
	if err != nil {
		return nil, err
	}
	for _, g := range groups {
		op := g.Key()
		switch op {
		case "$set", "$unset", "$inc", "$setOnInsert":
		default:
			return nil, &updateError{9, "FailedToParse", "unsupported update operator " + op}
		}
		if op == "$setOnInsert" {
			if !inserting {
				continue
			}
			op = "$set"
		}
		fields, ok := g.Value().DocumentOK()
		if !ok {
			return nil, &updateError{9, "FailedToParse", op + " needs a document"}
		}
		fes, _ := fields.Elements()
		for _, f := range fes {
			k := f.Key()
			if strings.Contains(k, ".") {
				return nil, &updateError{2, "BadValue", "dotted update paths are not supported: " + k}
			}
			if k == "_id" && hasID == nil && (op != "$set" || compare(f.Value(), oldID) != 0) {
				return nil, &updateError{66, "ImmutableField", "the (immutable) field '_id' was found to have been altered"}
			}
			if _, dup := ops[k]; dup {
				return nil, &updateError{40, "ConflictingUpdateOperators", "conflicting update of " + k}
			}
			ops[k] = &fieldOp{op: op, val: f.Value()}
			order = append(order, k)
		}
	}
	idx, out := bsoncore.AppendDocumentStart(make([]byte, 0, len(old)+len(u)))
	elems, err := old.Elements()
	if err != nil {
		return nil, err
	}
	for _, e := range elems {
		fo, ok := ops[e.Key()]
		if !ok {
			out = append(out, e...)
			continue
		}
		fo.done = true
		switch fo.op {
		case "$set":
			out = bsoncore.AppendValueElement(out, e.Key(), fo.val)
		case "$inc":
			sum, err := add(e.Value(), fo.val)
			if err != nil {
				return nil, err
			}
			out = bsoncore.AppendValueElement(out, e.Key(), sum)
		}
	}
	for _, k := range order {
		fo := ops[k]
		if fo.done || fo.op == "$unset" {
			continue
		}
		if fo.op == "$inc" && !fo.val.IsNumber() {
			return nil, &updateError{14, "TypeMismatch", "cannot $inc with a non-number"}
		}
		out = bsoncore.AppendValueElement(out, k, fo.val)
	}
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return out, nil
}

func add(a, b bsoncore.Value) (bsoncore.Value, error) {
	if !a.IsNumber() || !b.IsNumber() || a.Type == bsontype.Decimal128 || b.Type == bsontype.Decimal128 {
		return bsoncore.Value{}, &updateError{14, "TypeMismatch", "cannot $inc a non-number"}
	}
	if a.Type == bsontype.Double || b.Type == bsontype.Double {
		return bsoncore.Value{Type: bsontype.Double, Data: bsoncore.AppendDouble(nil, numberOf(a)+numberOf(b))}, nil
	}
	s := a.AsInt64() + b.AsInt64()
	if a.Type == bsontype.Int32 && b.Type == bsontype.Int32 && s >= math.MinInt32 && s <= math.MaxInt32 {
		return bsoncore.Value{Type: bsontype.Int32, Data: bsoncore.AppendInt32(nil, int32(s))}, nil
	}
	return bsoncore.Value{Type: bsontype.Int64, Data: bsoncore.AppendInt64(nil, s)}, nil
}

// upsertSeed is the document an upsert starts from: the filter's _id (or a new ObjectId) and
// its other top-level equality fields.
func upsertSeed(m *matcher, u bsoncore.Document) bsoncore.Document {
	idx, out := bsoncore.AppendDocumentStart(nil)
	var id *bsoncore.Value
	if !isOperatorDoc(u) {
		if v, err := u.LookupErr("_id"); err == nil {
			id = &v
		}
	}
	if id == nil {
		id = m.id
	}
	if id != nil {
		out = bsoncore.AppendValueElement(out, "_id", *id)
	} else {
		out = bsoncore.AppendObjectIDElement(out, "_id", newObjectID())
	}
	if isOperatorDoc(u) {
		for _, c := range m.equalities() {
			if c.path != "_id" {
				out = bsoncore.AppendValueElement(out, c.path, c.val)
			}
		}
	}
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return out
}

// project applies an inclusion or exclusion projection of top-level fields.
func project(d bsoncore.Document, proj bsoncore.Document) bsoncore.Document {
	if len(proj) <= 5 {
		return d
	}
	pes, _ := proj.Elements()
	fields := map[string]bool{}
	include, idIncluded := false, true
	for _, p := range pes {
		on := truthy(p.Value())
		if p.Key() == "_id" {
			idIncluded = on
			continue
		}
		fields[p.Key()] = on
		include = include || on
	}
	idx, out := bsoncore.AppendDocumentStart(nil)
	elems, _ := d.Elements()
	for _, e := range elems {
		k := e.Key()
		keep := !include
		if k == "_id" {
			keep = idIncluded
		} else if on, named := fields[k]; named {
			keep = on
		}
		if keep {
			out = append(out, e...)
		}
	}
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return out
}

// sortDocs sorts docs by a sort specification ({field: 1|-1, ...}).
func sortDocs(docs []bsoncore.Document, spec bsoncore.Document) {
	type key struct {
		path string
		dir  int
	}
	var keys []key
	es, _ := spec.Elements()
	for _, e := range es {
		dir := 1
		if numberOf(e.Value()) < 0 {
			dir = -1
		}
		keys = append(keys, key{e.Key(), dir})
	}
	sort.SliceStable(docs, func(i, j int) bool {
		for _, k := range keys {
			if r := compare(lookup(docs[i], k.path), lookup(docs[j], k.path)); r != 0 {
				return r*k.dir < 0
			}
		}
		return false
	})
}
