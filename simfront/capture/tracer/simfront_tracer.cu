/* simfront's NVBit tracer: writes Accel-Sim trace sets (tracer version 5 text format,
 * already grouped by thread block and warp, i.e. the `.traceg` that Accel-Sim's
 * post-processing would produce), compressed as they are written, plus a JSON-lines
 * launch sidecar.
 *
 * What differs from Accel-Sim's public tracer, and why:
 *  - launches through cuLaunchKernel, cuLaunchKernelEx (Triton, cuBLAS sm90) and CUDA
 *    graph kernel nodes are all seen;
 *  - registers / shared memory / binary version come from cuFuncGetAttribute on the
 *    launched function (checked against nvbit_get_func_config), never from a guessed
 *    parameter layout;
 *  - windows: whole run, cuProfilerStart/Stop, an NVTX range (this .so is also an
 *    NVTX injection library), and a kernel-name regex;
 *  - CTA sampling (every k-th CTA, first N of those) recorded in the header;
 *  - records carry a static-instruction id instead of the instruction's text, and
 *    addresses only for memory instructions, so far fewer bytes cross PCIe.
 *
 * Configuration is by environment (the capture driver sets these):
 *   SIMFRONT_TRACE_DIR      output folder (default ./traces)
 *   SIMFRONT_WINDOW         all | profiler | nvtx:NAME        (default all)
 *   SIMFRONT_KERNEL_REGEX   ECMAScript regex on the demangled or mangled name
 *   SIMFRONT_SAMPLE_STRIDE  trace every k-th CTA (default 1)
 *   SIMFRONT_SAMPLE_MAX_CTAS  trace at most N CTAs of each launch (default 0: all)
 *   SIMFRONT_SAMPLE_BOX     1: the N CTAs are a box of the grid's first ones, with two of
 *                           every grid dimension beyond x that has two (sample_box())
 *   SIMFRONT_MAX_KERNELS    stop tracing after N traced launches (default 0: no limit)
 *   SIMFRONT_LIST_ONLY      1: instrument nothing, write only the launch sidecar
 *   SIMFRONT_COMPRESS       xz | zstd | none (default xz)
 *   SIMFRONT_WRITERS        compression threads (default 4)
 *   SIMFRONT_VERBOSE        1: log each launch to stderr
 *   SIMFRONT_DEDUP          1: trace each distinct launch once (see below)
 *   SIMFRONT_RECORDS        window: full sidecar records for launches while the window is
 *                           open, counts per kernel name for the rest (default); all: a
 *                           full record for every launch of the process
 *
 * Deduplication: a launch is a repeat of an earlier traced launch when its function, grid,
 * block, dynamic shared memory and kernel-parameter bytes are equal, the parameter bytes
 * taken from cuFuncGetParamInfo's layout with every 8-byte-aligned word that lies inside a
 * device allocation (cuMemGetAddressRange) masked but for its low 7 bits (alignment and
 * offset within a 128-byte line): the same layer's kernel on another
 * layer's tensors is one launch, a different size, stride or scalar is not. A repeat is not
 * instrumented; its sidecar record is {"kernel_id": N, "same_as": M, ...} and M's count
 * goes into multiplicity.txt. Graph kernel nodes are never merged (their parameters are
 * not at hand at the node launch).
 */
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "nvbit.h"
#include "nvbit_tool.h"
#include "utils/channel.hpp"

#include "common.h"
#include "nvtx3/nvToolsExt.h"

#define SF_TRACER_NAME "simfront-tracer"
#define SF_TRACER_VERSION "1.3"
#define SF_FORMAT_VERSION "5"
#define CHANNEL_SIZE (1l << 24)

extern "C" unsigned char sf_flush_bin[];

/* ------------------------------------------------------------------ options */
static std::string g_dir = "traces";
static std::string g_window = "all";
static std::string g_nvtx_name;
static std::string g_regex_src;
static std::regex g_regex;
static bool g_have_regex = false;
static uint32_t g_stride = 1, g_maxcta = 0;
static int g_box = 0;
static long g_max_kernels = 0;
static int g_list_only = 0, g_verbose = 0, g_writers = 4;
static std::string g_compress = "xz";
static int g_dedup = 0;
static bool g_records_all = false;

/* ------------------------------------------------------------------ state */
static pthread_mutex_t g_mutex; /* recursive: one launch is handled at a time */
static thread_local bool t_skip = false;
static std::atomic<bool> g_profiler_on{false};
static std::atomic<int> g_nvtx_depth{0};
static long g_launch_id = 0;  /* every launch of the process, like Accel-Sim's ids */
static long g_traced = 0;
static FILE *g_sidecar = nullptr, *g_klist = nullptr;
/* deduplication: masked launch key -> the traced launch standing for it, and its count */
static std::unordered_map<std::string, long> g_dedup_rep;
static std::map<long, unsigned long long> g_multiplicity;
static std::map<long, std::string> g_rep_file;
static long g_dups = 0;
/* compact records: launches outside the window, counted per kernel name */
static std::map<std::string, unsigned long long> g_outside;

struct StaticInst {
  uint32_t pc;
  std::string mid;   /* "ndst [Rd] OPCODE nsrc [Rs...] " */
  int width;         /* bytes, 0 for non-memory */
  long long imm;
};
/* chunked table: a receiver may read entries while the launcher appends new ones */
static const int kChunkBits = 16;
static std::vector<StaticInst *> g_chunks;
static std::atomic<uint32_t> g_nsinst{0};
static StaticInst &sinst(uint32_t sid) { return g_chunks[sid >> kChunkBits][sid & ((1 << kChunkBits) - 1)]; }

struct CtaBuf {
  uint32_t x, y, z;
  std::vector<std::string> warps;
  std::vector<uint32_t> counts;
};
struct KernelBuf {
  long kernel_id;
  std::string header;
  std::string path;
  uint32_t nwarps;
  std::map<uint64_t, CtaBuf> ctas; /* ordered by linear CTA id, as Accel-Sim writes */
  uint64_t gx, gy;
  uint64_t records = 0;
  size_t bytes = 0;
  bool census = false; /* a sampled non-graph launch: count every CTA's warp instructions */
};
static std::mutex g_buf_mutex;
static std::unordered_map<uint32_t, std::shared_ptr<KernelBuf>> g_bufs; /* by slot */
static uint32_t g_next_slot = 1;
static std::atomic<uint64_t> g_flush_seen{0};

/* writer threads: compression runs beside the traced program */
static std::mutex g_wq_mutex;
static std::condition_variable g_wq_cv, g_wq_done_cv;
static std::deque<std::shared_ptr<KernelBuf>> g_wq;
static std::vector<std::thread> g_writer_threads;
static bool g_wq_stop = false;
static size_t g_wq_bytes = 0;
static int g_wq_busy = 0;
static std::atomic<int> g_write_errors{0};

struct CtxState {
  ChannelDev *ch_dev = nullptr;
  ChannelHost ch_host;
  CUmodule mod = nullptr;
  CUfunction flush_fn = nullptr;
  volatile bool recv_run = false, recv_done = false;
};
static std::unordered_map<CUcontext, CtxState *> g_ctx;
static uint64_t *g_cur_word = nullptr; /* managed: launch word of the non-graph launch in flight */

/* graph bookkeeping */
struct NodeCfg {
  unsigned gx, gy, gz, bx, by, bz, shmem;
};
static std::unordered_map<CUgraphExec, CUgraph> g_exec_graph;
static std::unordered_map<CUfunction, std::deque<NodeCfg>> g_graph_node_cfgs;
static std::vector<std::shared_ptr<KernelBuf>> g_graph_pending;
static std::unordered_set<CUfunction> g_instrumented;

/* ------------------------------------------------------------------ helpers */
static std::string env_str(const char *name, const char *dflt) {
  const char *v = getenv(name);
  return v ? std::string(v) : std::string(dflt);
}
static long env_long(const char *name, long dflt) {
  const char *v = getenv(name);
  return v && *v ? strtol(v, nullptr, 0) : dflt;
}
static void json_escape(std::string &out, const char *s) {
  for (; *s; ++s) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') {
      out += '\\';
      out += (char)c;
    } else if (c < 0x20) {
      char b[8];
      snprintf(b, sizeof b, "\\u%04x", c);
      out += b;
    } else {
      out += (char)c;
    }
  }
}
static bool is_number(const std::string &s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}
/* same rule as Accel-Sim's tracer: the first numeric opcode modifier is the width */
static int width_from_opcode(const std::string &op) {
  size_t start = 0;
  while (start <= op.size()) {
    size_t dot = op.find('.', start);
    std::string tok = op.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (is_number(tok)) return atoi(tok.c_str()) / 8;
    if (tok.size() > 1 && tok[0] == 'U' && is_number(tok.substr(1))) return atoi(tok.c_str() + 1) / 8;
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return 4;
}
static void mkdirs(const std::string &p) {
  std::string cur;
  for (size_t i = 0; i < p.size(); ++i) {
    cur += p[i];
    if (p[i] == '/' && cur.size() > 1) mkdir(cur.c_str(), 0755);
  }
  mkdir(p.c_str(), 0755);
}
/* Box sampling: at most n CTAs, the grid's first ones along each dimension, with two of
 * every dimension beyond x that has two. First-N in launch order sees one z-plane (one head
 * of a Triton SSD kernel), so data every plane re-reads (B and C, shared by the heads)
 * looks private; two of each dimension show which lines the blocks share, and along which
 * dimension, so a model can extrapolate the grid's DRAM traffic from them. */
static void sample_box(uint32_t n, uint32_t gx, uint32_t gy, uint32_t gz, uint32_t box[3]) {
  const uint32_t g[3] = {gx, gy, gz};
  box[0] = box[1] = box[2] = 1;
  for (int d = 2; d >= 1; --d)
    if (g[d] > 1 && box[0] * box[1] * box[2] * 2 <= n) box[d] = 2;
  for (int d = 0; d < 3; ++d) {
    uint32_t others = box[0] * box[1] * box[2] / box[d];
    uint32_t want = n / others;
    if (want > box[d]) box[d] = want < g[d] ? want : g[d];
    if (box[d] > SF_LW_BOX_MAX) box[d] = SF_LW_BOX_MAX;
  }
}

static bool window_open() {
  if (g_window == "all") return true;
  if (g_window == "profiler") return g_profiler_on.load();
  if (!g_nvtx_name.empty()) return g_nvtx_depth.load() > 0;
  return false;
}
static unsigned long long stream_id(CUstream s) {
  unsigned long long id = 0;
  if (cuStreamGetId(s, &id) != CUDA_SUCCESS) return (unsigned long long)(uintptr_t)s;
  return id;
}

/* ------------------------------------------------------------------ NVTX injection */
static thread_local std::vector<bool> t_nvtx_stack;
static void nvtx_push(const char *msg) {
  bool match = msg && g_nvtx_name == msg;
  t_nvtx_stack.push_back(match);
  if (match) g_nvtx_depth++;
}
static int NVTX_API sf_RangePushA(const char *msg) {
  nvtx_push(msg);
  return (int)t_nvtx_stack.size() - 1;
}
static int NVTX_API sf_RangePushEx(const nvtxEventAttributes_t *a) {
  const char *msg = nullptr;
  if (a && a->messageType == NVTX_MESSAGE_TYPE_ASCII) msg = a->message.ascii;
  nvtx_push(msg);
  return (int)t_nvtx_stack.size() - 1;
}
static int NVTX_API sf_RangePop(void) {
  if (t_nvtx_stack.empty()) return -1;
  if (t_nvtx_stack.back()) g_nvtx_depth--;
  t_nvtx_stack.pop_back();
  return (int)t_nvtx_stack.size();
}
extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    NvtxGetExportTableFunc_t getExportTable) {
  const NvtxExportTableCallbacks *cb =
      (const NvtxExportTableCallbacks *)getExportTable(NVTX_ETID_CALLBACKS);
  if (!cb) return 0;
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;
  if (!cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &table, &size) || !table) return 0;
  if (size > NVTX_CBID_CORE_RangePop) {
    *table[NVTX_CBID_CORE_RangePushA] = (NvtxFunctionPointer)sf_RangePushA;
    *table[NVTX_CBID_CORE_RangePushEx] = (NvtxFunctionPointer)sf_RangePushEx;
    *table[NVTX_CBID_CORE_RangePop] = (NvtxFunctionPointer)sf_RangePop;
  }
  return 1;
}

/* ------------------------------------------------------------------ writers */
static void write_kernel(const std::shared_ptr<KernelBuf> &kb) {
  std::string tmp = kb->path + ".part";
  FILE *f = nullptr;
  bool piped = false;
  if (g_compress == "none") {
    f = fopen(tmp.c_str(), "w");
  } else {
    std::string cmd = (g_compress == "zstd" ? "zstd -q -3 -T1 -o '" : "xz -1 -T1 -c > '");
    if (g_compress == "zstd") cmd += tmp + "' -";
    else cmd += tmp + "'";
    f = popen(cmd.c_str(), "w");
    piped = true;
  }
  if (!f) {
    fprintf(stderr, "[simfront-tracer] cannot write %s: %s\n", tmp.c_str(), strerror(errno));
    g_write_errors++;
    return;
  }
  fwrite(kb->header.data(), 1, kb->header.size(), f);
  for (auto &it : kb->ctas) {
    CtaBuf &c = it.second;
    fprintf(f, "\n#BEGIN_TB\n\nthread block = %u,%u,%u\n", c.x, c.y, c.z);
    for (size_t w = 0; w < c.warps.size(); ++w) {
      fprintf(f, "\nwarp = %zu\ninsts = %u\n", w, c.counts[w]);
      fwrite(c.warps[w].data(), 1, c.warps[w].size(), f);
    }
    fputs("\n#END_TB\n", f);
  }
  int rc = piped ? pclose(f) : fclose(f);
  if (rc != 0 || rename(tmp.c_str(), kb->path.c_str()) != 0) {
    fprintf(stderr, "[simfront-tracer] writing %s failed (rc %d)\n", kb->path.c_str(), rc);
    g_write_errors++;
  }
}
static void writer_main() {
  for (;;) {
    std::shared_ptr<KernelBuf> kb;
    {
      std::unique_lock<std::mutex> lk(g_wq_mutex);
      g_wq_cv.wait(lk, [] { return g_wq_stop || !g_wq.empty(); });
      if (g_wq.empty()) return;
      kb = g_wq.front();
      g_wq.pop_front();
      g_wq_busy++;
    }
    write_kernel(kb);
    {
      std::unique_lock<std::mutex> lk(g_wq_mutex);
      g_wq_bytes -= kb->bytes;
      g_wq_busy--;
    }
    kb.reset();
    g_wq_done_cv.notify_all();
  }
}
static void enqueue_write(const std::shared_ptr<KernelBuf> &kb) {
  std::unique_lock<std::mutex> lk(g_wq_mutex);
  /* bound host memory: wait while more than 8 GB of text is queued */
  g_wq_done_cv.wait(lk, [] { return g_wq_bytes < (8ull << 30); });
  g_wq_bytes += kb->bytes;
  g_wq.push_back(kb);
  g_wq_cv.notify_one();
}
static void drain_writers() {
  {
    std::unique_lock<std::mutex> lk(g_wq_mutex);
    g_wq_stop = true;
  }
  g_wq_cv.notify_all();
  for (auto &t : g_writer_threads)
    if (t.joinable()) t.join();
  g_writer_threads.clear();
}

/* ------------------------------------------------------------------ receiver */
static inline void append_hex(std::string &s, uint64_t v, int min_digits) {
  char b[24];
  int n = snprintf(b, sizeof b, "%0*llx", min_digits, (unsigned long long)v);
  s.append(b, n);
}
static void format_record(std::string &line, const sf_rec_t *r, const uint64_t *addrs) {
  const StaticInst &si = sinst(r->sid);
  append_hex(line, si.pc, 4);
  line += ' ';
  append_hex(line, r->mask, 8);
  line += ' ';
  line += si.mid;
  char b[64];
  if (si.width > 0) {
    int n = snprintf(b, sizeof b, "%d ", si.width);
    line.append(b, n);
    uint32_t mask = r->mask;
    /* address compression exactly as Accel-Sim's tracer: base+stride, else base+delta */
    uint64_t base = 0;
    int stride = 0;
    bool const_stride = true, first = false, last = false;
    for (int s = 0; s < 32; s++) {
      bool on = (mask >> s) & 1;
      if (on && !first) {
        first = true;
        base = addrs[s];
        if (s < 31 && ((mask >> (s + 1)) & 1)) stride = (int)(addrs[s + 1] - addrs[s]);
        else { const_stride = false; break; }
      } else if (first && !last) {
        if (on) {
          if ((uint64_t)(int64_t)stride != addrs[s] - addrs[s - 1]) { const_stride = false; break; }
        } else last = true;
      } else if (last) {
        if (on) { const_stride = false; break; }
      }
    }
    if (const_stride) {
      n = snprintf(b, sizeof b, "1 0x%llx %d ", (unsigned long long)base, stride);
      line.append(b, n);
    } else {
      bool f = false;
      uint64_t prev = 0;
      for (int s = 0; s < 32; s++) {
        if (!((mask >> s) & 1)) continue;
        if (!f) {
          n = snprintf(b, sizeof b, "2 0x%llx ", (unsigned long long)addrs[s]);
          f = true;
        } else {
          n = snprintf(b, sizeof b, "%lld ", (long long)(addrs[s] - prev));
        }
        line.append(b, n);
        prev = addrs[s];
      }
    }
  } else {
    line += "0 ";
  }
  int n = snprintf(b, sizeof b, "%d\n", (int)si.imm);
  line.append(b, n);
}

static void *recv_main(void *arg) {
  CtxState *cs = (CtxState *)arg;
  char *buf = (char *)malloc(CHANNEL_SIZE);
  uint32_t cur_slot = 0;
  std::shared_ptr<KernelBuf> cur;
  while (cs->recv_run) {
    uint32_t n = cs->ch_host.recv(buf, CHANNEL_SIZE);
    if (n == 0) {
      usleep(50);
      continue;
    }
    uint32_t off = 0;
    while (off < n) {
      const sf_rec_t *r = (const sf_rec_t *)(buf + off);
      off += r->has_addr ? sizeof(sf_mem_rec_t) : sizeof(sf_rec_t);
      if (r->slot == SF_SENTINEL_SLOT) {
        cur_slot = 0;
        cur.reset();
        g_flush_seen++;
        continue;
      }
      if (r->slot != cur_slot) {
        std::lock_guard<std::mutex> lk(g_buf_mutex);
        auto it = g_bufs.find(r->slot);
        cur = it == g_bufs.end() ? nullptr : it->second;
        cur_slot = r->slot;
      }
      if (!cur) continue;
      uint64_t lin = r->cta_x + r->cta_y * cur->gx + r->cta_z * cur->gx * cur->gy;
      auto it = cur->ctas.find(lin);
      if (it == cur->ctas.end()) {
        CtaBuf c;
        c.x = r->cta_x;
        c.y = r->cta_y;
        c.z = r->cta_z;
        c.warps.resize(cur->nwarps);
        c.counts.assign(cur->nwarps, 0);
        it = cur->ctas.emplace(lin, std::move(c)).first;
      }
      CtaBuf &c = it->second;
      if (r->warp_tb >= c.warps.size()) continue;
      std::string &s = c.warps[r->warp_tb];
      size_t before = s.size();
      format_record(s, r, r->has_addr ? ((const sf_mem_rec_t *)r)->addrs : nullptr);
      cur->bytes += s.size() - before;
      c.counts[r->warp_tb]++;
      cur->records++;
    }
  }
  free(buf);
  cs->recv_done = true;
  return nullptr;
}

/* ------------------------------------------------------------------ instrumentation */
static void instrument(CUcontext ctx, CUfunction func) {
  std::vector<CUfunction> fs = nvbit_get_related_functions(ctx, func);
  fs.push_back(func);
  CtxState *cs = g_ctx[ctx];
  for (CUfunction f : fs) {
    if (!g_instrumented.insert(f).second) continue;
    const std::vector<Instr *> &instrs = nvbit_get_instrs(ctx, f);
    for (Instr *in : instrs) {
      std::string op = in->getOpcode();
      int dst = -1, nsrc = 0, src[SF_MAX_SRC];
      int nmref = 0;
      long long imm = 0;
      for (int i = 0; i < in->getNumOperands(); ++i) {
        const InstrType::operand_t *o = in->getOperand(i);
        if (o->type == InstrType::OperandType::MREF) {
          if (nsrc < SF_MAX_SRC) src[nsrc++] = o->u.mref.ra_num;
          nmref++;
        } else if (o->type == InstrType::OperandType::REG) {
          if (i == 0) dst = o->u.reg.num;
          else if (nsrc < SF_MAX_SRC) src[nsrc++] = o->u.reg.num;
        } else if (o->type == InstrType::OperandType::IMM_UINT64) {
          imm = (long long)o->u.imm_uint64.value;
        }
      }
      uint32_t sid = g_nsinst.load();
      if ((sid >> kChunkBits) >= g_chunks.size()) {
        if (g_chunks.size() == g_chunks.capacity()) {
          fprintf(stderr, "[simfront-tracer] static instruction table full\n");
          abort();
        }
        g_chunks.push_back(new StaticInst[1 << kChunkBits]);
      }
      StaticInst &si = sinst(sid);
      si.pc = in->getOffset();
      char b[32];
      if (dst >= 0) {
        snprintf(b, sizeof b, "1 R%d ", dst);
        si.mid = b;
      } else {
        si.mid = "0 ";
      }
      si.mid += op;
      snprintf(b, sizeof b, " %d ", nsrc);
      si.mid += b;
      for (int k = 0; k < nsrc; ++k) {
        snprintf(b, sizeof b, "R%d ", src[k]);
        si.mid += b;
      }
      si.width = nmref > 0 ? width_from_opcode(op) : 0;
      si.imm = imm;
      g_nsinst.store(sid + 1);

      nvbit_insert_call(in, "sf_trace", IPOINT_BEFORE);
      nvbit_add_call_arg_guard_pred_val(in);
      nvbit_add_call_arg_const_val32(in, sid);
      if (nmref > 0) {
        nvbit_add_call_arg_const_val32(in, 1);
        /* LDGSTS: [shared], [global]; Accel-Sim keeps the global one */
        nvbit_add_call_arg_mref_addr64(in, nmref == 2 ? 1 : 0);
      } else {
        nvbit_add_call_arg_const_val32(in, 0);
        nvbit_add_call_arg_const_val64(in, 0);
      }
      nvbit_add_call_arg_launch_val64(in, 0);
      nvbit_add_call_arg_const_val64(in, (uint64_t)cs->ch_dev);
      nvbit_add_call_arg_const_val64(in, (uint64_t)g_cur_word);
    }
  }
}

/* ------------------------------------------------------------------ per launch */
struct LaunchInfo {
  CUfunction func;
  unsigned gx, gy, gz, bx, by, bz, dyn_shmem;
  CUstream stream;
  const char *api;
  bool graph;
  void **params;   /* kernelParams of cuLaunchKernel(Ex); null for graph nodes */
  void **extra;
};

static uint64_t fnv1a(const std::string &s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

/* The launch's parameter bytes with device pointers masked (see the header comment).
 * Returns false when they cannot be read (then the launch is never merged). */
static bool masked_params(CUfunction fa, const LaunchInfo &li, std::string &out,
                          unsigned *n_masked) {
  std::vector<std::pair<size_t, size_t>> layout;
  for (size_t i = 0;; ++i) {
    size_t off = 0, sz = 0;
    if (cuFuncGetParamInfo(fa, i, &off, &sz) != CUDA_SUCCESS) break;
    layout.emplace_back(off, sz);
  }
  /* no layout (a driver without cuFuncGetParamInfo, or a kernel without parameters):
   * nothing tells such launches apart, so they are never merged */
  if (layout.empty()) return false;
  const char *buf = nullptr;
  size_t bufsz = 0;
  if (li.extra) {
    for (void **e = li.extra; *e != CU_LAUNCH_PARAM_END; e += 2) {
      if (*e == CU_LAUNCH_PARAM_BUFFER_POINTER) buf = (const char *)e[1];
      else if (*e == CU_LAUNCH_PARAM_BUFFER_SIZE) bufsz = *(size_t *)e[1];
    }
    if (!buf) return false;
  } else if (!li.params) {
    return false;
  }
  for (size_t i = 0; i < layout.size(); ++i) {
    size_t off = layout[i].first, sz = layout[i].second;
    const char *p;
    if (buf) {
      if (off + sz > bufsz) return false;
      p = buf + off;
    } else {
      p = (const char *)li.params[i];
    }
    std::string bytes(p, sz);
    /* words at 8-byte-aligned offsets of the parameter buffer: where pointers live */
    for (size_t w = (8 - off % 8) % 8; w + 8 <= sz; w += 8) {
      uint64_t v;
      memcpy(&v, bytes.data() + w, 8);
      if (v < (1ull << 32)) continue; /* sizes, strides, flags: never an H100 address */
      CUdeviceptr base = 0;
      size_t len = 0;
      if (cuMemGetAddressRange_v2(&base, &len, (CUdeviceptr)v) == CUDA_SUCCESS && len) {
        /* the low 7 bits stay: a kernel may branch on its pointers' alignment (vector
         * loads), and the offset within a 128-byte line sets the sectors it touches */
        uint64_t m = ~0x7full | (v & 0x7f);
        memcpy(&bytes[w], &m, 8);
        if (n_masked) (*n_masked)++;
      }
    }
    char hdr[32];
    snprintf(hdr, sizeof hdr, "|%zu:%zu|", off, sz);
    out += hdr;
    out += bytes;
  }
  return true;
}

static bool name_selected(CUcontext ctx, CUfunction f) {
  if (!g_have_regex) return true;
  const char *mangled = nvbit_get_func_name(ctx, f, true);
  const char *plain = nvbit_get_func_name(ctx, f, false);
  return (plain && std::regex_search(plain, g_regex)) ||
         (mangled && std::regex_search(mangled, g_regex));
}

/* Decides, instruments, writes the sidecar line and the header; returns the buffer of a
 * traced launch (null when the launch is not traced). */
static std::shared_ptr<KernelBuf> begin_launch(CUcontext ctx, const LaunchInfo &li,
                                               uint64_t graph_handle) {
  long kid = ++g_launch_id;
  CUfunction f = li.func;
  /* with lazy module loading the function may not be loaded yet at this callback: its
   * attributes read -1 and it has no code to instrument */
  CUfunctionLoadingState ls = CU_FUNCTION_LOADING_STATE_LOADED;
  if (cuFuncIsLoaded(&ls, f) == CUDA_SUCCESS && ls != CU_FUNCTION_LOADING_STATE_LOADED)
    cuFuncLoad(f);
  int nregs = -1, shs = -1, binv = -1, lsz = -1;
  /* the runtime launches CUkernel handles (library API) cast to CUfunction: their
   * attributes are those of the context's CUfunction */
  CUfunction fa = f;
  if (cuFuncGetAttribute(&nregs, CU_FUNC_ATTRIBUTE_NUM_REGS, f) != CUDA_SUCCESS) {
    CUfunction kf = nullptr;
    if (cuKernelGetFunction(&kf, (CUkernel)f) == CUDA_SUCCESS && kf) {
      fa = kf;
      cuFuncGetAttribute(&nregs, CU_FUNC_ATTRIBUTE_NUM_REGS, fa);
    }
  }
  cuFuncGetAttribute(&shs, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fa);
  cuFuncGetAttribute(&binv, CU_FUNC_ATTRIBUTE_BINARY_VERSION, fa);
  cuFuncGetAttribute(&lsz, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, fa);
  const char *mangled = nvbit_get_func_name(ctx, f, true);
  unsigned long long sid = stream_id(li.stream);
  uint64_t nctas = (uint64_t)li.gx * li.gy * li.gz;
  bool traced = !g_list_only && window_open() && name_selected(ctx, f) &&
                (g_max_kernels == 0 || g_traced < g_max_kernels);
  long same_as = 0;
  uint64_t key_hash = 0;
  unsigned n_masked = 0;
  bool have_key = false;
  if (traced && g_dedup && !li.graph) {
    std::string key;
    char cfg[160];
    snprintf(cfg, sizeof cfg, "%p|%u,%u,%u|%u,%u,%u|%u", (void *)fa, li.gx, li.gy, li.gz,
             li.bx, li.by, li.bz, li.dyn_shmem);
    key = cfg;
    if (masked_params(fa, li, key, &n_masked)) {
      have_key = true;
      key_hash = fnv1a(key);
      auto it = g_dedup_rep.find(key);
      if (it != g_dedup_rep.end()) {
        same_as = it->second;
        traced = false;
      } else {
        g_dedup_rep.emplace(std::move(key), kid);
      }
    }
  }
  if (same_as) {
    g_multiplicity[same_as]++;
    g_dups++;
    char lb[160];
    snprintf(lb, sizeof lb, "{\"kernel_id\": %ld, \"same_as\": %ld, \"params_hash\": \"%016llx\"}\n",
             kid, same_as, (unsigned long long)key_hash);
    fputs(lb, g_sidecar);
    if (g_instrumented.count(f)) nvbit_enable_instrumented(ctx, f, false);
    return nullptr;
  }
  if (!traced && !g_records_all && !window_open()) {
    g_outside[mangled ? mangled : "?"]++;
    if (g_instrumented.count(f)) {
      if (li.graph) nvbit_set_at_launch(ctx, f, 0, li.stream, graph_handle);
      else nvbit_enable_instrumented(ctx, f, false);
    }
    return nullptr;
  }
  uint64_t traced_ctas = 0;
  uint32_t box[3] = {0, 0, 0};
  const bool boxed = traced && g_box && nctas > g_maxcta; /* g_box implies g_maxcta */
  if (boxed) {
    sample_box(g_maxcta, li.gx, li.gy, li.gz, box);
    traced_ctas = (uint64_t)box[0] * box[1] * box[2];
  } else if (traced) {
    uint64_t strided = (nctas + g_stride - 1) / g_stride;
    traced_ctas = g_maxcta ? std::min<uint64_t>(strided, g_maxcta) : strided;
  }

  std::string js = "{\"kernel_id\": " + std::to_string(kid) + ", \"name\": \"";
  json_escape(js, mangled ? mangled : "?");
  js += "\", \"demangled\": \"";
  const char *plain = nvbit_get_func_name(ctx, f, false);
  json_escape(js, plain ? plain : "?");
  char b[512];
  snprintf(b, sizeof b,
           "\", \"grid\": [%u, %u, %u], \"block\": [%u, %u, %u], \"regs\": %d, "
           "\"shmem\": %d, \"shmem_static\": %d, \"shmem_dynamic\": %u, \"local_bytes\": %d, "
           "\"binary_version\": %d, \"stream\": %llu, \"api\": \"%s\", \"graph\": %s, "
           "\"traced\": %s, \"window_open\": %s",
           li.gx, li.gy, li.gz, li.bx, li.by, li.bz, nregs, shs + (int)li.dyn_shmem, shs,
           li.dyn_shmem, lsz, binv, sid,
           li.api, li.graph ? "true" : "false", traced ? "true" : "false",
           window_open() ? "true" : "false");
  js += b;
  if (have_key) {
    snprintf(b, sizeof b, ", \"params_hash\": \"%016llx\", \"masked_words\": %u",
             (unsigned long long)key_hash, n_masked);
    js += b;
  }
  if (traced) {
    snprintf(b, sizeof b,
             ", \"file\": \"kernel-%ld.traceg%s\", \"sample_stride\": %u, "
             "\"sample_max_ctas\": %u, \"traced_ctas\": %llu",
             kid, g_compress == "xz" ? ".xz" : (g_compress == "zstd" ? ".zst" : ""), g_stride,
             g_maxcta, (unsigned long long)traced_ctas);
    js += b;
    if (boxed) {
      snprintf(b, sizeof b, ", \"sample_box\": [%u, %u, %u]", box[0], box[1], box[2]);
      js += b;
    }
  }
  js += "}\n";
  fputs(js.c_str(), g_sidecar);
  fflush(g_sidecar);
  if (traced) g_multiplicity[kid] = 1;
  if (g_verbose)
    fprintf(stderr, "[simfront-tracer] launch %ld %s %s traced=%d\n", kid, li.api,
            nvbit_get_func_name(ctx, f, false), (int)traced);

  if (!traced) {
    if (g_instrumented.count(f)) {
      if (li.graph) nvbit_set_at_launch(ctx, f, 0, li.stream, graph_handle);
      else nvbit_enable_instrumented(ctx, f, false);
    }
    return nullptr;
  }

  instrument(ctx, f);
  nvbit_enable_instrumented(ctx, f, true);
  auto kb = std::make_shared<KernelBuf>();
  kb->kernel_id = kid;
  kb->gx = li.gx;
  kb->gy = li.gy;
  kb->nwarps = (li.bx * li.by * li.bz + 31) / 32;
  const char *ext = g_compress == "xz" ? ".xz" : (g_compress == "zstd" ? ".zst" : "");
  kb->path = g_dir + "/kernel-" + std::to_string(kid) + ".traceg" + ext;
  g_rep_file[kid] = kb->path.substr(kb->path.rfind('/') + 1);
  std::string &h = kb->header;
  h = "-kernel name = ";
  h += mangled ? mangled : "?";
  snprintf(b, sizeof b,
           "\n-kernel id = %ld\n-grid dim = (%u,%u,%u)\n-block dim = (%u,%u,%u)\n"
           "-shmem = %d\n-nregs = %d\n-binary version = %d\n-cuda stream id = %llu\n"
           "-shmem base_addr = 0x%016llx\n-local mem base_addr = 0x%016llx\n"
           "-nvbit version = %s\n-accelsim tracer version = %s\n-enable lineinfo = 0\n",
           kid, li.gx, li.gy, li.gz, li.bx, li.by, li.bz, shs + (int)li.dyn_shmem, nregs, binv,
           sid, (unsigned long long)nvbit_get_shmem_base_addr(ctx),
           (unsigned long long)nvbit_get_local_mem_base_addr(ctx), NVBIT_VERSION,
           SF_FORMAT_VERSION);
  h += b;
  snprintf(b, sizeof b,
           "-simfront tracer = %s %s\n-launch api = %s\n-cuda graph = %d\n"
           "-tb sampling = stride %u max %u ",
           SF_TRACER_NAME, SF_TRACER_VERSION, li.api, li.graph ? 1 : 0, g_stride, g_maxcta);
  h += b;
  if (boxed) {
    snprintf(b, sizeof b, "box %u,%u,%u ", box[0], box[1], box[2]);
    h += b;
  }
  snprintf(b, sizeof b, "traced %llu of %llu\n", (unsigned long long)traced_ctas,
           (unsigned long long)nctas);
  h += b;
  h += "\n#traces format = [line_num] PC mask dest_num [reg_dests] opcode src_num [reg_srcs] "
       "mem_width [adrrescompress?] [mem_addresses] immediate\n\n";

  uint32_t slot;
  {
    std::lock_guard<std::mutex> lk(g_buf_mutex);
    slot = g_next_slot++;
    if (g_next_slot >= SF_SENTINEL_SLOT) g_next_slot = 1;
    g_bufs[slot] = kb;
  }
  uint32_t stride_bits = g_stride > 0xfff ? 0xfff : g_stride;
  uint64_t word = (uint64_t)slot | ((uint64_t)stride_bits << 24) | ((uint64_t)g_maxcta << 36);
  if (boxed)
    word = (uint64_t)slot | (1ull << 24) | ((uint64_t)box[0] << 36) | ((uint64_t)box[1] << 45) |
           ((uint64_t)box[2] << 54) | (1ull << 63);
  if (li.graph) {
    nvbit_set_at_launch(ctx, f, word, li.stream, graph_handle);
  } else {
    nvbit_set_at_launch(ctx, f, word);
    kb->census = traced_ctas < nctas;
    /* the previous launch has finished (launches are serialised here) */
    for (int i = 0; i < SF_CENSUS_STRIPES; i++) g_cur_word[SF_CENSUS_OFFSET + i] = 0;
    *(volatile uint64_t *)g_cur_word = word;
  }
  g_traced++;
  return kb;
}

/* Waits until the receiver has seen everything the GPU pushed so far. */
static void flush_channel(CUcontext ctx) {
  CtxState *cs = g_ctx[ctx];
  /* the traced kernels may run on any stream: wait for all of them before the marker */
  cudaDeviceSynchronize();
  uint64_t before = g_flush_seen.load();
  void *args[] = {&cs->ch_dev};
  nvbit_launch_kernel(ctx, cs->flush_fn, 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr);
  cudaDeviceSynchronize();
  while (g_flush_seen.load() == before) usleep(20);
}

static void finish_launches(std::vector<std::shared_ptr<KernelBuf>> &kbs) {
  for (auto &kb : kbs) {
    {
      std::lock_guard<std::mutex> lk(g_buf_mutex);
      for (auto it = g_bufs.begin(); it != g_bufs.end(); ++it)
        if (it->second == kb) {
          g_bufs.erase(it);
          break;
        }
    }
    size_t slash = kb->path.rfind('/');
    fprintf(g_klist, "%s\n", kb->path.substr(slash + 1).c_str());
    fflush(g_klist);
    enqueue_write(kb);
  }
  kbs.clear();
}

/* After the launch has finished: its census goes into the header, beside the sampling line,
 * as "-tb census = W warp instructions" (W over every CTA of the grid). */
static void add_census(KernelBuf &kb) {
  unsigned long long total = 0;
  for (int i = 0; i < SF_CENSUS_STRIPES; i++)
    total += ((volatile uint64_t *)g_cur_word)[SF_CENSUS_OFFSET + i];
  char line[96];
  snprintf(line, sizeof line, "-tb census = %llu warp instructions\n", total);
  size_t at = kb.header.find("\n#traces format");
  if (at == std::string::npos) at = kb.header.size();
  kb.header.insert(at, line);
}

static std::shared_ptr<KernelBuf> g_pending; /* launch in flight (non-graph) */

static void on_launch(CUcontext ctx, int is_exit, nvbit_api_cuda_t cbid, void *params) {
  LaunchInfo li{};
  bool ex = cbid == API_CUDA_cuLaunchKernelEx || cbid == API_CUDA_cuLaunchKernelEx_ptsz;
  if (ex) {
    cuLaunchKernelEx_params *p = (cuLaunchKernelEx_params *)params;
    li.func = p->f;
    li.gx = p->config->gridDimX;
    li.gy = p->config->gridDimY;
    li.gz = p->config->gridDimZ;
    li.bx = p->config->blockDimX;
    li.by = p->config->blockDimY;
    li.bz = p->config->blockDimZ;
    li.dyn_shmem = p->config->sharedMemBytes;
    li.stream = p->config->hStream;
    li.api = "cuLaunchKernelEx";
    li.params = p->kernelParams;
    li.extra = p->extra;
  } else {
    cuLaunchKernel_params *p = (cuLaunchKernel_params *)params;
    li.func = p->f;
    li.gx = p->gridDimX;
    li.gy = p->gridDimY;
    li.gz = p->gridDimZ;
    li.bx = p->blockDimX;
    li.by = p->blockDimY;
    li.bz = p->blockDimZ;
    li.dyn_shmem = p->sharedMemBytes;
    li.stream = p->hStream;
    li.api = "cuLaunchKernel";
    li.params = p->kernelParams;
    li.extra = p->extra;
  }
  CUstreamCaptureStatus cap = CU_STREAM_CAPTURE_STATUS_NONE;
  cuStreamIsCapturing(li.stream, &cap);
  if (cap != CU_STREAM_CAPTURE_STATUS_NONE) {
    /* a launch recorded into a graph: it runs (and is traced) at cuGraphLaunch */
    if (!is_exit) {
      std::string js = "{\"captured\": true, \"name\": \"";
      json_escape(js, nvbit_get_func_name(ctx, li.func, true));
      js += "\", \"api\": \"";
      js += li.api;
      js += "\"}\n";
      fputs(js.c_str(), g_sidecar);
    }
    return;
  }
  if (!is_exit) {
    g_pending = begin_launch(ctx, li, 0);
  } else if (g_pending) {
    std::vector<std::shared_ptr<KernelBuf>> v{g_pending};
    g_pending.reset();
    flush_channel(ctx);
    *(volatile uint64_t *)g_cur_word = 0;
    if (v[0]->census) add_census(*v[0]);
    finish_launches(v);
  }
}

static void graph_collect_nodes(CUgraph g) {
  size_t n = 0;
  if (cuGraphGetNodes(g, nullptr, &n) != CUDA_SUCCESS || n == 0) return;
  std::vector<CUgraphNode> nodes(n);
  cuGraphGetNodes(g, nodes.data(), &n);
  for (CUgraphNode nd : nodes) {
    CUgraphNodeType t;
    if (cuGraphNodeGetType(nd, &t) != CUDA_SUCCESS) continue;
    if (t == CU_GRAPH_NODE_TYPE_KERNEL) {
      CUDA_KERNEL_NODE_PARAMS kp;
      memset(&kp, 0, sizeof kp);
      if (cuGraphKernelNodeGetParams_v2(nd, &kp) != CUDA_SUCCESS) continue;
      CUfunction f = kp.func;
      if (!f && kp.kern) cuKernelGetFunction(&f, kp.kern);
      if (!f) continue;
      g_graph_node_cfgs[f].push_back(NodeCfg{kp.gridDimX, kp.gridDimY, kp.gridDimZ,
                                             kp.blockDimX, kp.blockDimY, kp.blockDimZ,
                                             kp.sharedMemBytes});
    } else if (t == CU_GRAPH_NODE_TYPE_GRAPH) {
      CUgraph child;
      if (cuGraphChildGraphNodeGetGraph(nd, &child) == CUDA_SUCCESS) graph_collect_nodes(child);
    }
  }
}

void nvbit_at_graph_node_launch(CUcontext ctx, CUfunction func, CUstream stream,
                                uint64_t launch_handle) {
  pthread_mutex_lock(&g_mutex);
  LaunchInfo li{};
  li.func = func;
  li.stream = stream;
  li.api = "cuGraphLaunch";
  li.graph = true;
  auto &q = g_graph_node_cfgs[func];
  if (!q.empty()) {
    NodeCfg c = q.front();
    q.pop_front();
    q.push_back(c); /* the same graph may be launched again */
    li.gx = c.gx; li.gy = c.gy; li.gz = c.gz;
    li.bx = c.bx; li.by = c.by; li.bz = c.bz;
    li.dyn_shmem = c.shmem;
  } else {
    func_config_t fc;
    memset(&fc, 0, sizeof fc);
    nvbit_get_func_config(ctx, func, &fc);
    li.gx = fc.gridDimX; li.gy = fc.gridDimY; li.gz = fc.gridDimZ;
    li.bx = fc.blockDimX; li.by = fc.blockDimY; li.bz = fc.blockDimZ;
    li.dyn_shmem = fc.shmem_dynamic_nbytes;
  }
  auto kb = begin_launch(ctx, li, launch_handle);
  if (kb) g_graph_pending.push_back(kb);
  pthread_mutex_unlock(&g_mutex);
}

/* ------------------------------------------------------------------ NVBit callbacks */
void nvbit_at_init() {
  setenv("CUDA_MANAGED_FORCE_DEVICE_ALLOC", "1", 1);
  /* NVBit instruments loaded functions only: lazy loading leaves a launched function
   * without code at the launch callback */
  setenv("CUDA_MODULE_LOADING", "EAGER", 1);
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_init(&g_mutex, &a);
  g_dir = env_str("SIMFRONT_TRACE_DIR", "traces");
  g_window = env_str("SIMFRONT_WINDOW", "all");
  if (g_window.rfind("nvtx:", 0) == 0) {
    g_nvtx_name = g_window.substr(5);
  } else if (g_window != "all" && g_window != "profiler") {
    fprintf(stderr, "[simfront-tracer] unknown SIMFRONT_WINDOW '%s'\n", g_window.c_str());
    _exit(3);
  }
  g_regex_src = env_str("SIMFRONT_KERNEL_REGEX", "");
  if (!g_regex_src.empty()) {
    try {
      g_regex = std::regex(g_regex_src, std::regex::ECMAScript);
      g_have_regex = true;
    } catch (const std::regex_error &e) {
      fprintf(stderr, "[simfront-tracer] bad SIMFRONT_KERNEL_REGEX: %s\n", e.what());
      _exit(3);
    }
  }
  g_stride = (uint32_t)env_long("SIMFRONT_SAMPLE_STRIDE", 1);
  if (g_stride == 0) g_stride = 1;
  if (g_stride > 0xfff) g_stride = 0xfff;
  g_maxcta = (uint32_t)env_long("SIMFRONT_SAMPLE_MAX_CTAS", 0);
  if (g_maxcta > 0xfffffff) g_maxcta = 0xfffffff;
  g_box = (int)env_long("SIMFRONT_SAMPLE_BOX", 0);
  if (g_box && !g_maxcta) {
    fprintf(stderr, "[simfront-tracer] SIMFRONT_SAMPLE_BOX needs SIMFRONT_SAMPLE_MAX_CTAS\n");
    _exit(3);
  }
  if (g_box && g_stride > 1) {
    fprintf(stderr, "[simfront-tracer] SIMFRONT_SAMPLE_BOX takes no SIMFRONT_SAMPLE_STRIDE\n");
    _exit(3);
  }
  g_max_kernels = env_long("SIMFRONT_MAX_KERNELS", 0);
  g_list_only = (int)env_long("SIMFRONT_LIST_ONLY", 0);
  g_verbose = (int)env_long("SIMFRONT_VERBOSE", 0);
  g_writers = (int)env_long("SIMFRONT_WRITERS", 4);
  if (g_writers < 1) g_writers = 1;
  g_compress = env_str("SIMFRONT_COMPRESS", "xz");
  g_dedup = (int)env_long("SIMFRONT_DEDUP", 0);
  g_records_all = env_str("SIMFRONT_RECORDS", "window") == "all";
  if (g_compress != "xz" && g_compress != "zstd" && g_compress != "none") {
    fprintf(stderr, "[simfront-tracer] unknown SIMFRONT_COMPRESS '%s'\n", g_compress.c_str());
    _exit(3);
  }
}

/* Outputs are opened at the first context, not at load: LD_PRELOAD also loads this tool
 * into every child process (ptxas, compiler workers), which must not truncate them. */
static void open_outputs() {
  if (g_sidecar) return;
  mkdirs(g_dir);
  g_sidecar = fopen((g_dir + "/launches.jsonl").c_str(), "w");
  g_klist = fopen((g_dir + "/kernelslist.g").c_str(), "w");
  if (!g_sidecar || !g_klist) {
    fprintf(stderr, "[simfront-tracer] cannot write into %s: %s\n", g_dir.c_str(),
            strerror(errno));
    _exit(3);
  }
  g_chunks.reserve(1 << 12);
  for (int i = 0; i < g_writers; ++i) g_writer_threads.emplace_back(writer_main);
  fprintf(stderr, "[simfront-tracer] %s %s: dir=%s window=%s regex='%s' stride=%u max_ctas=%u\n",
          SF_TRACER_NAME, SF_TRACER_VERSION, g_dir.c_str(), g_window.c_str(),
          g_regex_src.c_str(), g_stride, g_maxcta);
}

void nvbit_at_ctx_init(CUcontext ctx) {
  pthread_mutex_lock(&g_mutex);
  open_outputs();
  g_ctx[ctx] = new CtxState;
  pthread_mutex_unlock(&g_mutex);
}

void nvbit_tool_init(CUcontext ctx) {
  pthread_mutex_lock(&g_mutex);
  CtxState *cs = g_ctx[ctx];
  nvbit_load_tool_module(ctx, (const void *)sf_flush_bin, &cs->mod);
  nvbit_find_function_by_name(ctx, cs->mod, "sf_flush", &cs->flush_fn);
  cudaMallocManaged(&cs->ch_dev, sizeof(ChannelDev));
  if (!g_cur_word) {
    const size_t words = SF_CENSUS_OFFSET + SF_CENSUS_STRIPES;
    cudaMallocManaged(&g_cur_word, words * sizeof(uint64_t));
    memset(g_cur_word, 0, words * sizeof(uint64_t));
  }
  cs->recv_run = true;
  cs->ch_host.init((int)g_ctx.size() - 1, CHANNEL_SIZE, cs->ch_dev, recv_main, cs);
  nvbit_set_tool_pthread(cs->ch_host.get_thread());
  pthread_mutex_unlock(&g_mutex);
}

void nvbit_at_cuda_event(CUcontext ctx, int is_exit, nvbit_api_cuda_t cbid, const char *name,
                         void *params, CUresult *pStatus) {
  if (t_skip) return;
  switch (cbid) {
    case API_CUDA_cuLaunchKernel:
    case API_CUDA_cuLaunchKernel_ptsz:
    case API_CUDA_cuLaunchKernelEx:
    case API_CUDA_cuLaunchKernelEx_ptsz:
      /* held from entry to exit so a launch from another thread (autograd's) waits */
      if (!is_exit) pthread_mutex_lock(&g_mutex);
      t_skip = true;
      on_launch(ctx, is_exit, cbid, params);
      t_skip = false;
      if (is_exit) pthread_mutex_unlock(&g_mutex);
      break;
    case API_CUDA_cuGraphInstantiate:
    case API_CUDA_cuGraphInstantiate_v2:
    case API_CUDA_cuGraphInstantiateWithFlags:
    case API_CUDA_cuGraphInstantiateWithParams:
      if (is_exit && (!pStatus || *pStatus == CUDA_SUCCESS)) {
        /* all instantiate variants start with (CUgraphExec *, CUgraph) */
        cuGraphInstantiateWithFlags_params *p = (cuGraphInstantiateWithFlags_params *)params;
        pthread_mutex_lock(&g_mutex);
        t_skip = true;
        if (p->phGraphExec) g_exec_graph[*p->phGraphExec] = p->hGraph;
        graph_collect_nodes(p->hGraph);
        t_skip = false;
        pthread_mutex_unlock(&g_mutex);
      }
      break;
    case API_CUDA_cuGraphLaunch:
    case API_CUDA_cuGraphLaunch_ptsz: {
      if (!is_exit) {
        pthread_mutex_lock(&g_mutex);
      } else {
        t_skip = true;
        if (!g_graph_pending.empty()) {
          flush_channel(ctx);
          finish_launches(g_graph_pending);
        }
        t_skip = false;
        pthread_mutex_unlock(&g_mutex);
      }
      break;
    }
    case API_CUDA_cuProfilerStart:
      if (is_exit) g_profiler_on = true;
      break;
    case API_CUDA_cuProfilerStop:
      if (!is_exit) {
        /* launches before the stop are done by the time a later launch syncs */
        g_profiler_on = false;
      }
      break;
    default:
      break;
  }
}

void nvbit_at_ctx_term(CUcontext ctx) {
  pthread_mutex_lock(&g_mutex);
  t_skip = true;
  CtxState *cs = g_ctx[ctx];
  if (cs && cs->recv_run) {
    cs->recv_run = false;
    while (!cs->recv_done) usleep(100);
    cs->ch_host.destroy(false);
  }
  t_skip = false;
  pthread_mutex_unlock(&g_mutex);
}

void nvbit_at_term() {
  if (!g_sidecar) return; /* a process that never made a CUDA context */
  drain_writers();
  for (auto &it : g_outside) {
    std::string js = "{\"outside_window\": true, \"name\": \"";
    json_escape(js, it.first.c_str());
    js += "\", \"count\": " + std::to_string(it.second) + "}\n";
    fputs(js.c_str(), g_sidecar);
  }
  if (g_dedup) {
    /* Accel-Sim's kernelslist.g names each distinct launch once; this says how many
     * launches of the window each stands for */
    std::string mp = g_dir + "/multiplicity.txt";
    FILE *m = fopen((mp + ".part").c_str(), "w");
    if (m) {
      fputs("# simfront multiplicity 1: trace file, launches of the window it stands for\n", m);
      for (auto &it : g_multiplicity) {
        auto fn = g_rep_file.find(it.first);
        if (fn != g_rep_file.end()) fprintf(m, "%s %llu\n", fn->second.c_str(), it.second);
      }
      if (fclose(m) == 0) rename((mp + ".part").c_str(), mp.c_str());
    }
  }
  if (g_sidecar) fclose(g_sidecar);
  if (g_klist) fclose(g_klist);
  g_sidecar = g_klist = nullptr;
  fprintf(stderr, "[simfront-tracer] done: %ld launches, %ld traced, %ld repeats, %d write errors\n",
          g_launch_id, g_traced, g_dups, g_write_errors.load());
  if (g_write_errors.load()) _exit(4);
}
