// Package interruption reacts to EC2 interruption events, as Karpenter's
// --interruption-queue does: EventBridge rules deliver spot interruption
// warnings, rebalance recommendations, instance state changes and AWS
// Health scheduled changes to an SQS queue; the controller long-polls the
// queue, maps each event's instances to NodeClaims by provider ID, and
// deletes the NodeClaims whose instances are going away (the lifecycle
// finalizer then cordons and drains the node and terminates the instance)
// so that their pods move before EC2 takes the instance. A spot
// interruption also marks its offering unavailable for a while, so that the
// replacement lands elsewhere.
//
// The decoding of one message is package messages, pure and fuzzed; the
// Controller does the I/O.
package interruption
