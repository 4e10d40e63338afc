package usage

// failScale is the fixed point of an entry's failures as stored: in
// 1/1024ths of a call, so that a saturated entry's failures can follow the
// failure rate (see merge) without rounding holding them in place.
const failScale = 1024

// merge adds the calls of ev to e (an entry of ev's key; a zero Entry for a
// new one), counting at most maxCount calls (< 0: no bound). failed is e's
// failures in 1/failScale (e.Failed is it rounded). The latest event gives
// the text and the offered tools.
//
// Once Count saturates, each further call replaces an average one of those
// counted: failed loses 1/maxCount of itself and gains the call's failure.
// Failed then follows the recent failure rate instead of freezing (a tool
// that starts failing shows it) or running away.
func merge(e *Entry, failed *int64, ev prepared, maxCount int) {
	if e.Count == 0 {
		e.Key = ev.key
		e.First, e.Last = ev.Time, ev.Time
		e.Text, e.Offered = ev.Request, ev.Offered
	}
	if ev.Time.Before(e.First) {
		e.First = ev.Time
	}
	if !ev.Time.Before(e.Last) {
		e.Last = ev.Time
		e.Text, e.Offered = ev.Request, ev.Offered
	}
	var f int64
	if !ev.OK {
		f = failScale
	}
	n := ev.count
	if maxCount < 0 || e.Count+n <= int64(maxCount) {
		e.Count += n
		*failed += f * n
	} else {
		m := int64(maxCount)
		if room := m - e.Count; room > 0 {
			e.Count = m
			*failed += f * room
			n -= room
		}
		// After 8×maxCount calls of one kind the older ones weigh
		// (1-1/maxCount)^(8×maxCount) < 0.04%: no need to go on.
		for i := int64(0); i < n && i < 8*m; i++ {
			*failed += f - *failed/m
		}
	}
	*failed = min(max(*failed, 0), e.Count*failScale)
	e.Failed = (*failed + failScale/2) / failScale
}
