package eval

import "hash/fnv"

// Share is a fixed pseudo-random number in [0,1) for (salt, key): the same
// on every machine and in every run, for splitting queries and tools into
// held-out and tuning parts (bench/tune, train/laststep) without a stored list.
func Share(salt, key string) float64 {
	h := fnv.New64a()
	h.Write([]byte(salt))
	h.Write([]byte{0})
	h.Write([]byte(key))
	// FNV's high bits mix poorly for keys that differ only at the end:
	// finish with splitmix64's mixer.
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return float64(x>>11) / float64(1<<53)
}
