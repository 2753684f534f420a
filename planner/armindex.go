package planner

import (
	"hash/maphash"
	"strings"
)

// armIndex finds the node declaring an ARM ID, case-insensitively (ARM IDs
// are), without a lower-cased copy of every ID: 20 MB at 100,000 resources.
// Its key is a hash of the lower-cased ID; the IDs under one hash are told
// apart by comparing them.
type armIndex map[uint64][]*Node

var armSeed = maphash.MakeSeed()

// foldHash hashes id as strings.ToLower(id) would read.
func foldHash(id string) uint64 {
	var buf [256]byte
	if len(id) > len(buf) {
		return maphash.String(armSeed, strings.ToLower(id))
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 0x80:
			return maphash.String(armSeed, strings.ToLower(id))
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	return maphash.Bytes(armSeed, buf[:len(id)])
}

// sameID reports whether a and b are one ARM ID: equal once lower-cased.
func sameID(a, b string) bool {
	if len(a) == len(b) && isASCII(a) && isASCII(b) {
		return strings.EqualFold(a, b)
	}
	// Not EqualFold: the index's key is strings.ToLower (foldHash), and
	// EqualFold folds more than ToLower ("ſ" is "s" to it), so the two
	// would disagree on which IDs are one.
	//lint:ignore SA6005 equality must be ToLower's, as foldHash's key is
	return strings.ToLower(a) == strings.ToLower(b)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// get returns the node declaring id, or nil.
func (x armIndex) get(id string) *Node {
	for _, n := range x[foldHash(id)] {
		if sameID(n.ARMID, id) {
			return n
		}
	}
	return nil
}

// add records n under its ARM ID unless a node holds it already; it
// returns that node.
func (x armIndex) add(n *Node) (held *Node) {
	h := foldHash(n.ARMID)
	for _, o := range x[h] {
		if sameID(o.ARMID, n.ARMID) {
			return o
		}
	}
	x[h] = append(x[h], n)
	return nil
}

// remove drops n from the index (under its current ARM ID).
func (x armIndex) remove(n *Node) {
	h := foldHash(n.ARMID)
	list := x[h]
	for i, o := range list {
		if o == n {
			if len(list) == 1 {
				delete(x, h)
			} else {
				x[h] = append(list[:i:i], list[i+1:]...)
			}
			return
		}
	}
}
