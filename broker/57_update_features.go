package broker

// UpdateFeatures (57): v0-2
//
// What `kafka-features upgrade`, `downgrade` and `disable` send: new
// finalized levels for features (features.go), validated as Kafka 4.4's
// FeatureControlManager validates them and with its messages, then kept in
// the features collection, so they survive restarts and every broker of a
// cluster reports them in ApiVersions with the next finalized-features
// epoch. ValidateOnly (--dry-run) validates and changes nothing.
//
// Each update is checked in request order against the current levels; the
// first refused one fails the whole request with INVALID_UPDATE_VERSION and
// "The update failed for all features since the following feature had an
// error: ...": an upgrade type other than UPGRADE (1), SAFE_DOWNGRADE (2)
// and UNSAFE_DOWNGRADE (3); a level below 0; a feature Gregor does not
// know (level 0: not found); a level outside the supported range ("Local
// controller N only supports versions A-B", so nothing is finalized above
// what Gregor implements); a lower level with the type UPGRADE; any
// metadata.version downgrade, safe or unsafe, which Kafka 4.4 refuses too.
// v0's AllowDowngrade is not read, as in Kafka 4.4, which takes every v0
// update as an UPGRADE. v0 and v1 answer a success with a result per
// update (error message "NONE", as Kafka's); v2 with none, and a failure
// at any version with the top-level error alone.
//
// ALTER on the CLUSTER is required (CLUSTER_AUTHORIZATION_FAILED,
// acl_apis.go), as in Kafka.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.UpdateFeatures, 0, 2, (*Broker).handleUpdateFeatures) }

// The upgrade types of UpdateFeatures v1+.
const (
	featureUpgrade         = 1
	featureSafeDowngrade   = 2
	featureUnsafeDowngrade = 3
)

// featureUpdateTimeout bounds the write of new finalized levels.
const featureUpdateTimeout = 10 * time.Second

// errFeatureUpdate is a refused update: its message.
type errFeatureUpdate struct{ msg string }

func (e *errFeatureUpdate) Error() string { return e.msg }

func (b *Broker) handleUpdateFeatures(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.UpdateFeaturesRequest)
	resp := req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
	changes := map[string]int16{}
	for _, u := range req.FeatureUpdates {
		changes[u.Feature] = u.MaxVersionLevel
	}
	validate := func(levels map[string]int16) error {
		for _, u := range req.FeatureUpdates {
			typ := u.UpgradeType
			if req.Version == 0 {
				typ = featureUpgrade
			}
			if msg := b.checkFeatureUpdate(levels, u.Feature, u.MaxVersionLevel, typ); msg != "" {
				return &errFeatureUpdate{"The update failed for all features since the following feature had an error: " + msg}
			}
		}
		return nil
	}
	var err error
	if req.ValidateOnly || len(changes) == 0 {
		levels, _ := b.finalizedFeatures()
		err = validate(levels)
	} else {
		ctx, cancel := context.WithTimeout(r.ctx, featureUpdateTimeout)
		err = b.finalizeFeatures(ctx, changes, validate)
		cancel()
	}
	var refused *errFeatureUpdate
	switch {
	case errors.As(err, &refused):
		resp.ErrorCode, resp.ErrorMessage = kerr.InvalidUpdateVersion.Code, kmsg.StringPtr(refused.msg)
		return resp, nil
	case err != nil:
		resp.ErrorCode, resp.ErrorMessage = kerr.RequestTimedOut.Code, kmsg.StringPtr(err.Error())
		return resp, nil
	}
	if req.Version < 2 {
		for _, u := range req.FeatureUpdates {
			res := kmsg.NewUpdateFeaturesResponseResult()
			res.Feature, res.ErrorMessage = u.Feature, kmsg.StringPtr("NONE")
			resp.Results = append(resp.Results, res)
		}
	}
	return resp, nil
}

// checkFeatureUpdate is why Kafka 4.4 refuses to finalize name at level
// with the upgrade type typ, given the current levels, or "".
func (b *Broker) checkFeatureUpdate(levels map[string]int16, name string, level int16, typ int8) string {
	invalid := func(why string) string {
		return fmt.Sprintf("Invalid update version %d for feature %s. %s", level, name, why)
	}
	if typ < featureUpgrade || typ > featureUnsafeDowngrade {
		return invalid("The controller does not support the given upgrade type.")
	}
	if level < 0 {
		return invalid("A feature version cannot be less than 0.")
	}
	f := featureOf(name)
	if f == nil {
		if level == 0 {
			return invalid("Feature " + name + " not found.")
		}
		return invalid(fmt.Sprintf("Local controller %d does not support this feature.", b.nodeID))
	}
	if level < f.min || level > f.max {
		return invalid(fmt.Sprintf("Local controller %d only supports versions %d-%d", b.nodeID, f.min, f.max))
	}
	cur := levels[name]
	if level < cur && typ == featureUpgrade {
		return invalid("Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.")
	}
	if name == "metadata.version" && level < cur {
		if typ == featureUnsafeDowngrade {
			return fmt.Sprintf("Unsupported metadata.version downgrade from %d to %d. Unsafe metadata downgrade is not supported in this version.", cur, level)
		}
		return fmt.Sprintf("Unsupported metadata.version downgrade from %d to %d. Refusing to perform the requested downgrade because it might delete metadata information.", cur, level)
	}
	return ""
}
