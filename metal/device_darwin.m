// device_darwin.m: the Metal side of the darwin device. The device, queue, library and pipelines
// are created once per process; buffers live in a table indexed by handle-1.
#import <Foundation/Foundation.h>
#import <Metal/Metal.h>
#include <string.h>

#include "device_darwin.h"

static id<MTLDevice> gDevice;
static id<MTLCommandQueue> gQueue;
static NSArray<id<MTLComputePipelineState>>* gPipelines;
static NSMutableArray* gBuffers;  // id<MTLBuffer> or NSNull for a freed handle
static char* gInitError;

static char* dupError(NSString* what, NSError* err) {
  NSString* s = err ? [NSString stringWithFormat:@"%@: %@", what, err.localizedDescription] : what;
  return strdup(s.UTF8String);
}

char* mtl_init(const char* src, const char** names, int n) {
  static dispatch_once_t once;
  dispatch_once(&once, ^{
    @autoreleasepool {
      gDevice = MTLCreateSystemDefaultDevice();
      if (!gDevice) {
        gInitError = strdup("no Metal device");
        return;
      }
      gQueue = [gDevice newCommandQueue];
      NSError* err = nil;
      MTLCompileOptions* opts = [MTLCompileOptions new];
      id<MTLLibrary> lib = [gDevice newLibraryWithSource:[NSString stringWithUTF8String:src] options:opts error:&err];
      if (!lib) {
        gInitError = dupError(@"compiling kernels", err);
        return;
      }
      NSMutableArray* pipes = [NSMutableArray arrayWithCapacity:n];
      for (int i = 0; i < n; i++) {
        NSString* name = [NSString stringWithUTF8String:names[i]];
        id<MTLFunction> fn = [lib newFunctionWithName:name];
        id<MTLComputePipelineState> p = fn ? [gDevice newComputePipelineStateWithFunction:fn error:&err] : nil;
        if (!p) {
          gInitError = dupError([NSString stringWithFormat:@"pipeline %@", name], err);
          return;
        }
        [pipes addObject:p];
      }
      gPipelines = pipes;
      gBuffers = [NSMutableArray new];
    }
  });
  return gInitError ? strdup(gInitError) : NULL;
}

static uint64_t addBuffer(id<MTLBuffer> b) {
  if (!b) return 0;
  @synchronized(gBuffers) {
    [gBuffers addObject:b];
    return (uint64_t)gBuffers.count;
  }
}

static id<MTLBuffer> buffer(uint64_t h) {
  @synchronized(gBuffers) {
    if (h == 0 || h > gBuffers.count) return nil;
    id b = gBuffers[h - 1];
    return b == [NSNull null] ? nil : b;
  }
}

uint64_t mtl_new_buffer(size_t size) {
  id<MTLBuffer> b = [gDevice newBufferWithLength:(size ? size : 1) options:MTLResourceStorageModeShared];
  if (b) memset(b.contents, 0, b.length);
  return addBuffer(b);
}

uint64_t mtl_wrap_nocopy(const void* p, uint64_t off, size_t size) {
  void* start = (char*)p - off;
  return addBuffer([gDevice newBufferWithBytesNoCopy:start length:size options:MTLResourceStorageModeShared deallocator:nil]);
}

uint64_t mtl_wrap_copy(const void* p, size_t n) {
  return addBuffer([gDevice newBufferWithBytes:p length:n options:MTLResourceStorageModeShared]);
}

char* mtl_device_name(int* family) {
  @autoreleasepool {
    *family = 0;
    id<MTLDevice> dev = gDevice ? gDevice : MTLCreateSystemDefaultDevice();
    if (!dev) return NULL;
    // MTLGPUFamilyAppleN is MTLGPUFamilyApple1 + N - 1; asked by value, so that families newer
    // than the SDK's headers are still recognized.
    for (int n = 10; n >= 1; n--) {
      if ([dev supportsFamily:(MTLGPUFamily)(MTLGPUFamilyApple1 + n - 1)]) {
        *family = n;
        break;
      }
    }
    return strdup(dev.name.UTF8String);
  }
}

void mtl_free(uint64_t h) {
  @synchronized(gBuffers) {
    if (h > 0 && h <= gBuffers.count) gBuffers[h - 1] = [NSNull null];
  }
}

void mtl_write(uint64_t h, uint64_t off, const void* src, size_t n) {
  memcpy((char*)buffer(h).contents + off, src, n);
}

void mtl_read(uint64_t h, uint64_t off, void* dst, size_t n) {
  memcpy(dst, (const char*)buffer(h).contents + off, n);
}

// Stream is one device's submission state: the command buffers committed since its last wait.
@interface LayaStream : NSObject
@property(nonatomic, strong) NSMutableArray<id<MTLCommandBuffer>>* pending;
// last is how many of pending the last submission committed.
@property(nonatomic) NSUInteger last;
@end

@implementation LayaStream
@end

void* mtl_stream_new(void) {
  LayaStream* s = [LayaStream new];
  s.pending = [NSMutableArray new];
  return (void*)CFBridgingRetain(s);
}

void mtl_stream_free(void* stream) { CFBridgingRelease(stream); }

// A plan is committed in command buffers of at most kChunk dispatches, so the GPU starts on the
// first while the host encodes the rest. Command buffers of one queue run in order, and Metal
// orders the encoders' accesses to the (tracked) buffers across them, so a chunk boundary needs
// no barrier.
enum { kChunk = 64 };

// encode encodes d[0..n) into one command buffer with a concurrent encoder: a memory barrier
// precedes each dispatch whose barrier flag is set. The caller holds the gBuffers lock, which
// makes the handle lookups safe without a lock per binding. It returns NULL or an error.
static char* encode(id<MTLCommandBuffer> cb, const mtl_dispatch* d, int n) {
  id<MTLComputeCommandEncoder> enc = [cb computeCommandEncoderWithDispatchType:MTLDispatchTypeConcurrent];
  NSUInteger count = gBuffers.count;
  for (int i = 0; i < n; i++) {
    const mtl_dispatch* x = &d[i];
    if (x->kid >= gPipelines.count) {
      [enc endEncoding];
      return strdup("unknown kernel id");
    }
    id<MTLComputePipelineState> pipe = gPipelines[x->kid];
    if ((NSUInteger)x->threads[0] * x->threads[1] * x->threads[2] > pipe.maxTotalThreadsPerThreadgroup) {
      [enc endEncoding];
      return dupError([NSString stringWithFormat:@"kernel %u: %u threads per threadgroup exceed the pipeline's %lu", x->kid,
                                                 x->threads[0] * x->threads[1] * x->threads[2],
                                                 (unsigned long)pipe.maxTotalThreadsPerThreadgroup], nil);
    }
    if (x->barrier && i > 0) [enc memoryBarrierWithScope:MTLBarrierScopeBuffers];
    [enc setComputePipelineState:pipe];
    for (uint32_t a = 0; a < x->nargs; a++) {
      uint64_t h = x->args[a].buf;
      id b = h > 0 && h <= count ? gBuffers[h - 1] : nil;
      if (!b || b == [NSNull null]) {
        [enc endEncoding];
        return strdup("dispatch binds a freed or unknown buffer");
      }
      [enc setBuffer:b offset:x->args[a].off atIndex:a];
    }
    [enc setBytes:x->params length:4 * (x->nparams ? x->nparams : 1) atIndex:x->nargs];
    [enc dispatchThreadgroups:MTLSizeMake(x->groups[0], x->groups[1], x->groups[2])
        threadsPerThreadgroup:MTLSizeMake(x->threads[0], x->threads[1], x->threads[2])];
  }
  [enc endEncoding];
  return NULL;
}

char* mtl_submit(void* stream, const mtl_dispatch* d, int n) {
  @autoreleasepool {
    LayaStream* s = (__bridge LayaStream*)stream;
    s.last = 0;
    @synchronized(gBuffers) {
      for (int i = 0; i < n; i += kChunk) {
        id<MTLCommandBuffer> cb = [gQueue commandBuffer];
        char* err = encode(cb, d + i, n - i < kChunk ? n - i : kChunk);
        if (err) return err;
        [cb commit];
        [s.pending addObject:cb];
        s.last++;
      }
    }
    return NULL;
  }
}

// waitFirst waits for the first n pending command buffers and forgets them.
static char* waitFirst(LayaStream* s, NSUInteger n) {
  NSError* first = nil;
  BOOL failed = NO;
  for (NSUInteger i = 0; i < n; i++) {
    id<MTLCommandBuffer> cb = s.pending[i];
    [cb waitUntilCompleted];
    if (!failed && cb.status == MTLCommandBufferStatusError) {
      failed = YES;
      first = cb.error;
    }
  }
  [s.pending removeObjectsInRange:NSMakeRange(0, n)];
  if (s.last > s.pending.count) s.last = s.pending.count;
  return failed ? dupError(@"command buffer", first) : NULL;
}

char* mtl_wait(void* stream) {
  @autoreleasepool {
    LayaStream* s = (__bridge LayaStream*)stream;
    return waitFirst(s, s.pending.count);
  }
}

char* mtl_wait_previous(void* stream) {
  @autoreleasepool {
    LayaStream* s = (__bridge LayaStream*)stream;
    return waitFirst(s, s.pending.count - s.last);
  }
}
