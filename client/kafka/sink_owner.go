package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// transactionsV1 caps the sink's producer at EndTxn v4, Kafka's transaction protocol
// before KIP-890 part 2. The sink's exactly-once argument needs only the fence of
// transactions v1 (docs/sinks.md, "Kafka"); under part 2 a broker may answer a stale
// EndTxn as the retry of a newer one (KIP-890's retry detection), and kfake, the broker
// the tests run, hands such a zombie the current epoch or INVALID_TXN_STATE instead of
// PRODUCER_FENCED, so the zombie could end, or restart over, its replacement's
// transactions. Every transactional broker, Kafka 0.11 on, speaks v1.
func transactionsV1() *kversion.Versions {
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(int16(kmsg.EndTxn), 4)
	return vs
}

// stillOwner returns refused, the broker's restartable refusal of a transaction of
// producer (id, epoch), if the broker still names that producer as txnID's: restarting
// then takes the id from no one else. If a newer producer holds it, another instance
// took the partition and this one is a zombie: the error is ErrFenced. If the broker
// cannot say, refused is returned wrapped as not restartable, since a restart that
// cannot be checked may take the id from a live instance.
func (s *Sink) stillOwner(ctx context.Context, kc *kgo.Client, txnID string, id int64, epoch int16, refused error) error {
	tctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	described, err := kadm.NewClient(kc).DescribeTransactions(tctx, txnID)
	if err == nil {
		err = described[txnID].Err
	}
	if err != nil {
		return fmt.Errorf("%w (its producer could not be checked, so the partition does not restart: %v)", unrestartable{refused}, err)
	}
	now := described[txnID]
	if now.ProducerID != id || now.ProducerEpoch != epoch {
		return fmt.Errorf("%w: transactional id %s is now producer %d epoch %d, this instance's was %d epoch %d: %w",
			ErrFenced, txnID, now.ProducerID, now.ProducerEpoch, id, epoch, refused)
	}
	return refused
}

// unrestartable wraps an error restartable would otherwise accept.
type unrestartable struct{ err error }

func (u unrestartable) Error() string { return u.err.Error() }
func (u unrestartable) Unwrap() error { return u.err }
