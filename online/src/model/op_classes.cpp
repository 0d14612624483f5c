#include "op_classes.h"

#include <charconv>

#include "straggler_probe/op_kinds.h"

namespace sp::online {

IdealRule ideal_rule(uint32_t kind) {
  if (kind == SP_OP_GC || kind == SP_OP_DATA_WAIT) return IdealRule::kSlotMean;
  return op_role(kind) == OpRole::kComm ? IdealRule::kMedian : IdealRule::kMean;
}

std::string op_type_name(const sp_event& ev, int my_stage, int peer_stage) {
  switch (ev.kind) {
    case SP_OP_COLLECTIVE: return std::string(collective_name(ev.coll));
    case SP_OP_SEND:
    case SP_OP_RECV: {
      const bool send = ev.kind == SP_OP_SEND;
      // Pipeline direction from the stages, as the paper names p2p ops: activations flow to the
      // next stage (forward), gradients to the previous one (backward).
      if (my_stage >= 0 && peer_stage >= 0 && my_stage != peer_stage) {
        const bool towards_next = send ? peer_stage > my_stage : peer_stage < my_stage;
        return std::string(towards_next ? "forward-" : "backward-") + (send ? "send" : "recv");
      }
      return send ? "send" : "recv";
    }
    default: {
      const OpKindInfo* k = op_kind_info(ev.kind);
      return k != nullptr && k->op_class == OpKindClass::kCompute ? std::string(k->type_name)
                                                                   : std::string("unknown");
    }
  }
}

namespace {

// std::to_string's digits without its temporary.
template <typename Int>
void append_number(std::string* out, Int v) {
  char buf[24];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out->append(buf, end);
}

}  // namespace

void ideal_key_into(std::string* out, const sp_event& ev, std::string_view type,
                    std::string_view name, int ordinal, int stage, int piece) {
  std::string& key = *out;
  key.assign(type);
  if (ev.kind == SP_OP_OTHER && !name.empty()) {
    key += ':';
    key += name;
  } else if (op_role(ev.kind) == OpRole::kCompute) {
    // The k-th piece of a micro-batch's forward is compared with the k-th piece on the other
    // ranks: under FSDP a forward is a sliver before the first all-gather and a layer's work
    // after each one, and one mean for all pieces would give the sliver a layer's time (an
    // ideal whose work sits before the all-gathers, where no rank does it). The first piece
    // keeps the plain key: ops never cut compare as before.
    if (piece > 0) {
      key += '~';
      append_number(&key, piece);
    }
  } else if (ev.kind == SP_OP_SEND || ev.kind == SP_OP_RECV) {
    // A pipeline transfer is compared with the same transfer of the schedule (the stage's
    // ordinal-th send or receive of its direction) on the other pipelines and steps: where it
    // falls in the schedule decides what it shares the link with. Gloo, for one, holds a send
    // to a peer behind the receive from that peer posted before it; in an interleaved schedule
    // some transfers then always take tens of ms and others none, and one median for all would
    // give every transfer the long time (an ideal 20% longer than the real step).
    key += ":s";
    append_number(&key, stage);
    key += '#';
    append_number(&key, ordinal);
    if (ev.bytes > 0) {
      key += ":b";
      append_number(&key, ev.bytes);
    }
  } else if (op_role(ev.kind) == OpRole::kComm) {
    // Transfers are only comparable for equal payloads (DDP's first bucket is smaller than the
    // rest). Without a size, the op's position among the rank's ops of this type stands in.
    if (ev.bytes > 0) {
      key += ":b";
      append_number(&key, ev.bytes);
    } else {
      key += ":#";
      append_number(&key, ordinal);
    }
  }
}

std::string ideal_key(const sp_event& ev, std::string_view type, std::string_view name,
                      int ordinal, int stage, int piece) {
  std::string key;
  ideal_key_into(&key, ev, type, name, ordinal, stage, piece);
  return key;
}

}  // namespace sp::online
