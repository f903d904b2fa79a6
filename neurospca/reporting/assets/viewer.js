/*! neurospca interactive viewer 1.0.0 | (c) 2026 neurospca developers | BSD-3-Clause (LICENSE beside this file) */
(function () {
  "use strict";
  var DEG = Math.PI / 180;

  function bytes(s) {
    var bin = atob(s), out = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  }
  function inflate(s) {
    var st = new Blob([bytes(s)]).stream().pipeThrough(new DecompressionStream("deflate"));
    return new Response(st).arrayBuffer();
  }
  function ints(u8, size, cols, signed) {
    // integers as packed by neurospca: columns delta-coded mod 2^(8 size), byte planes
    var m = u8.length / size, n = m / cols, out = new Float64Array(m), mod = Math.pow(2, 8 * size);
    for (var c = 0; c < cols; c++) {
      var acc = 0;
      for (var r = 0; r < n; r++) {
        var t = c * n + r, v = 0;
        for (var b = size - 1; b >= 0; b--) v = v * 256 + u8[b * m + t];
        acc = (acc + v) % mod;
        out[r * cols + c] = signed && acc >= mod / 2 ? acc - mod : acc;
      }
    }
    return out;
  }
  function el(root, cls) { return root.querySelector("." + cls); }
  function rgb(lut, q) {
    var i = Math.round((q + 127) * 255 / 254) * 3;
    return [lut[i], lut[i + 1], lut[i + 2]];
  }
  function fmt(v) { return Math.abs(v) >= 1e-3 || v === 0 ? v.toPrecision(3) : v.toExponential(2); }

  /* ---------------- volumes: three orthogonal slices on a 2-D canvas ---------------- */

  function Volume(root, d, raw) {
    var n = d.shape, nx = n[0], ny = n[1], nz = n[2], a = d.affine;
    var bg = new Uint8Array(raw.bg), bits = new Uint8Array(raw.mask);
    var where = [];
    for (var f = 0; f < nx * ny * nz; f++) if (bits[f >> 3] & (128 >> (f & 7))) where.push(f);
    var vox = d.voxel, cut = d.comps[0].peak.slice(), comp = 0, vol = new Int8Array(nx * ny * nz);
    var canvas = el(root, "nsv-canvas"), ctx = canvas.getContext("2d"), status = el(root, "nsv-status");
    // panels: [fixed axis, horizontal axis, vertical axis]; mm widths give the layout
    var panels = [[0, 1, 2], [1, 0, 2], [2, 0, 1]], size = [nx * vox[0], ny * vox[1], nz * vox[2]];
    var widthMm = size[1] + 2 * size[0], heightMm = Math.max(size[2], size[1]);
    var scale = canvas.width / widthMm;
    canvas.height = Math.round(heightMm * scale);
    var boxes = [], x0 = 0;
    panels.forEach(function (p) {
      var w = size[p[1]] * scale, h = size[p[2]] * scale;
      boxes.push([x0, (canvas.height - h) / 2, w, h]);
      x0 += w;
    });
    function setComp(k) {
      comp = k;
      vol.fill(0);
      var q = new Int8Array(raw.comps[k]);
      for (var i = 0; i < where.length; i++) vol[where[i]] = q[i];
    }
    function at(i, j, k) { return (i * ny + j) * nz + k; }
    function draw() {
      ctx.fillStyle = "#000";
      ctx.fillRect(0, 0, canvas.width, canvas.height);
      panels.forEach(function (p, m) {
        var W = n[p[1]], H = n[p[2]], img = ctx.createImageData(W, H), px = img.data;
        var ijk = cut.slice();
        for (var v = 0; v < H; v++) {
          for (var u = 0; u < W; u++) {
            ijk[p[1]] = u; ijk[p[2]] = H - 1 - v;
            var f = at(ijk[0], ijk[1], ijk[2]), g = bg[f], q = vol[f], o = 4 * (v * W + u);
            var c = q === 0 ? [g, g, g] : rgb(d.lut, q);
            px[o] = c[0]; px[o + 1] = c[1]; px[o + 2] = c[2]; px[o + 3] = 255;
          }
        }
        var off = document.createElement("canvas");
        off.width = W; off.height = H;
        off.getContext("2d").putImageData(img, 0, 0);
        var b = boxes[m];
        ctx.imageSmoothingEnabled = false;
        ctx.drawImage(off, b[0], b[1], b[2], b[3]);
        ctx.strokeStyle = "rgba(80,160,255,0.8)";
        ctx.beginPath();
        var cx = b[0] + (cut[p[1]] + 0.5) * b[2] / W, cy = b[1] + (H - cut[p[2]] - 0.5) * b[3] / H;
        ctx.moveTo(cx, b[1]); ctx.lineTo(cx, b[1] + b[3]);
        ctx.moveTo(b[0], cy); ctx.lineTo(b[0] + b[2], cy);
        ctx.stroke();
      });
      var xyz = [0, 1, 2].map(function (r) {
        return a[r][0] * cut[0] + a[r][1] * cut[1] + a[r][2] * cut[2] + a[r][3];
      });
      var q = vol[at(cut[0], cut[1], cut[2])], value = q * d.comps[comp].scale / 127;
      status.textContent = "x = " + xyz[0].toFixed(1) + ", y = " + xyz[1].toFixed(1) + ", z = " +
        xyz[2].toFixed(1) + " mm (voxel " + cut.join(", ") + "), loading " +
        (q === 0 ? "0 (not in the support)" : fmt(value));
      root.dataset.cut = cut.join(",");
    }
    function panelAt(x, y) {
      for (var m = 0; m < 3; m++) {
        var b = boxes[m];
        if (x >= b[0] && x < b[0] + b[2] && y >= b[1] && y < b[1] + b[3]) return m;
      }
      return -1;
    }
    function pos(e) {
      var r = canvas.getBoundingClientRect();
      return [(e.clientX - r.left) * canvas.width / r.width, (e.clientY - r.top) * canvas.height / r.height];
    }
    function pick(e) {
      var xy = pos(e), m = panelAt(xy[0], xy[1]);
      if (m < 0) return;
      var p = panels[m], b = boxes[m], W = n[p[1]], H = n[p[2]];
      cut[p[1]] = Math.min(W - 1, Math.max(0, Math.floor((xy[0] - b[0]) * W / b[2])));
      cut[p[2]] = Math.min(H - 1, Math.max(0, H - 1 - Math.floor((xy[1] - b[1]) * H / b[3])));
      draw();
    }
    var down = false;
    canvas.addEventListener("mousedown", function (e) { down = true; pick(e); });
    canvas.addEventListener("mousemove", function (e) { if (down) pick(e); });
    window.addEventListener("mouseup", function () { down = false; });
    canvas.addEventListener("wheel", function (e) {
      var xy = pos(e), m = panelAt(xy[0], xy[1]);
      if (m < 0) return;
      e.preventDefault();
      var ax = panels[m][0];
      cut[ax] = Math.min(n[ax] - 1, Math.max(0, cut[ax] + (e.deltaY > 0 ? -1 : 1)));
      draw();
    }, { passive: false });
    el(root, "nsv-select").addEventListener("change", function (e) {
      setComp(+e.target.value);
      cut = d.comps[comp].peak.slice();
      draw();
    });
    setComp(0);
    draw();
  }

  /* ---------------- surfaces: both hemispheres, WebGL or a 2-D canvas ---------------- */

  var VS = "attribute vec3 p;attribute vec3 nm;attribute vec3 c;uniform mat3 R;uniform vec3 s;" +
    "varying vec3 vc;void main(){vec3 q=R*p;gl_Position=vec4(q.x*s.x,q.y*s.y,-q.z*s.z,1.0);" +
    "vec3 m=normalize(R*nm);vc=c*(0.35+0.65*abs(m.z));}";
  var FS = "precision mediump float;varying vec3 vc;void main(){gl_FragColor=vec4(vc,1.0);}";

  function rotation(yaw, pitch) {
    var cy = Math.cos(yaw * DEG), sy = Math.sin(yaw * DEG), cp = Math.cos(pitch * DEG), sp = Math.sin(pitch * DEG);
    // R = Rx(pitch) Rz(yaw), row-major
    return [cy, -sy, 0, cp * sy, cp * cy, -sp, sp * sy, sp * cy, cp];
  }

  function GL(canvas, hemis) {
    var gl = canvas.getContext("webgl", { antialias: true });
    if (!gl) return null;
    function shader(type, src) {
      var s = gl.createShader(type);
      gl.shaderSource(s, src);
      gl.compileShader(s);
      return s;
    }
    var prog = gl.createProgram();
    gl.attachShader(prog, shader(gl.VERTEX_SHADER, VS));
    gl.attachShader(prog, shader(gl.FRAGMENT_SHADER, FS));
    gl.linkProgram(prog);
    if (!gl.getProgramParameter(prog, gl.LINK_STATUS)) return null;
    gl.useProgram(prog);
    var big = hemis.some(function (h) { return h.n > 65535; });
    if (big && !gl.getExtension("OES_element_index_uint")) return null;
    var loc = { p: gl.getAttribLocation(prog, "p"), nm: gl.getAttribLocation(prog, "nm"), c: gl.getAttribLocation(prog, "c") };
    function buffer(kind, data) {
      var b = gl.createBuffer();
      gl.bindBuffer(kind, b);
      gl.bufferData(kind, data, gl.STATIC_DRAW);
      return b;
    }
    var bufs = hemis.map(function (h) {
      return {
        p: buffer(gl.ARRAY_BUFFER, h.xyz), nm: buffer(gl.ARRAY_BUFFER, h.normals),
        c: buffer(gl.ARRAY_BUFFER, h.rgb), f: buffer(gl.ELEMENT_ARRAY_BUFFER, h.faces)
      };
    });
    function attr(name, b, size, type, norm) {
      gl.bindBuffer(gl.ARRAY_BUFFER, b);
      gl.enableVertexAttribArray(loc[name]);
      gl.vertexAttribPointer(loc[name], size, type, norm, 0, 0);
    }
    return {
      kind: "webgl",
      colours: function () {
        hemis.forEach(function (h, i) {
          gl.bindBuffer(gl.ARRAY_BUFFER, bufs[i].c);
          gl.bufferData(gl.ARRAY_BUFFER, h.rgb, gl.STATIC_DRAW);
        });
      },
      draw: function (r, sx, sy, sz, shown) {
        gl.viewport(0, 0, canvas.width, canvas.height);
        gl.clearColor(1, 1, 1, 1);
        gl.enable(gl.DEPTH_TEST);
        gl.clear(gl.COLOR_BUFFER_BIT | gl.DEPTH_BUFFER_BIT);
        gl.uniformMatrix3fv(gl.getUniformLocation(prog, "R"), false, [r[0], r[3], r[6], r[1], r[4], r[7], r[2], r[5], r[8]]);
        gl.uniform3f(gl.getUniformLocation(prog, "s"), sx, sy, sz);
        hemis.forEach(function (h, i) {
          if (!shown[i]) return;
          attr("p", bufs[i].p, 3, gl.FLOAT, false);
          attr("nm", bufs[i].nm, 3, gl.FLOAT, false);
          attr("c", bufs[i].c, 3, gl.UNSIGNED_BYTE, true);
          gl.bindBuffer(gl.ELEMENT_ARRAY_BUFFER, bufs[i].f);
          gl.drawElements(gl.TRIANGLES, h.faces.length, big ? gl.UNSIGNED_INT : gl.UNSIGNED_SHORT, 0);
        });
      }
    };
  }

  function Flat(canvas, hemis) {
    // a small z-buffer rasteriser (Gouraud shading, as the WebGL path) into one ImageData
    var ctx = canvas.getContext("2d");
    function triangle(px, zb, W, H, X, Y, Z, C, a, b, c) {
      var x0 = X[a], y0 = Y[a], x1 = X[b], y1 = Y[b], x2 = X[c], y2 = Y[c];
      var area = (x1 - x0) * (y2 - y0) - (x2 - x0) * (y1 - y0);
      if (area === 0) return;
      var minx = Math.max(0, Math.floor(Math.min(x0, x1, x2))), maxx = Math.min(W - 1, Math.ceil(Math.max(x0, x1, x2)));
      var miny = Math.max(0, Math.floor(Math.min(y0, y1, y2))), maxy = Math.min(H - 1, Math.ceil(Math.max(y0, y1, y2)));
      for (var y = miny; y <= maxy; y++) {
        var py = y + 0.5;
        for (var x = minx; x <= maxx; x++) {
          var qx = x + 0.5;
          var w0 = ((x1 - qx) * (y2 - py) - (x2 - qx) * (y1 - py)) / area;
          var w1 = ((x2 - qx) * (y0 - py) - (x0 - qx) * (y2 - py)) / area;
          var w2 = 1 - w0 - w1;
          if (w0 < -1e-6 || w1 < -1e-6 || w2 < -1e-6) continue;
          var z = w0 * Z[a] + w1 * Z[b] + w2 * Z[c], k = y * W + x;
          if (z <= zb[k]) continue;
          zb[k] = z;
          var o = 4 * k;
          px[o] = w0 * C[3 * a] + w1 * C[3 * b] + w2 * C[3 * c];
          px[o + 1] = w0 * C[3 * a + 1] + w1 * C[3 * b + 1] + w2 * C[3 * c + 1];
          px[o + 2] = w0 * C[3 * a + 2] + w1 * C[3 * b + 2] + w2 * C[3 * c + 2];
        }
      }
    }
    return {
      kind: "2d",
      colours: function () {},
      draw: function (r, sx, sy, sz, shown) {
        var W = canvas.width, H = canvas.height, img = ctx.createImageData(W, H), px = img.data;
        var zb = new Float32Array(W * H).fill(-Infinity);
        px.fill(255);
        hemis.forEach(function (h, hi) {
          if (!shown[hi]) return;
          var n = h.n, x = h.xyz, N = h.normals, f = h.faces;
          var X = new Float32Array(n), Y = new Float32Array(n), Z = new Float32Array(n), C = new Float32Array(3 * n);
          for (var i = 0; i < n; i++) {
            var a = x[3 * i], b = x[3 * i + 1], c = x[3 * i + 2];
            X[i] = (r[0] * a + r[1] * b + r[2] * c) * sx * W / 2 + W / 2;
            Y[i] = H / 2 - (r[3] * a + r[4] * b + r[5] * c) * sy * H / 2;
            Z[i] = r[6] * a + r[7] * b + r[8] * c;
            var l = 0.35 + 0.65 * Math.abs(r[6] * N[3 * i] + r[7] * N[3 * i + 1] + r[8] * N[3 * i + 2]);
            C[3 * i] = h.rgb[3 * i] * l; C[3 * i + 1] = h.rgb[3 * i + 1] * l; C[3 * i + 2] = h.rgb[3 * i + 2] * l;
          }
          for (var t = 0; t < f.length; t += 3) triangle(px, zb, W, H, X, Y, Z, C, f[t], f[t + 1], f[t + 2]);
        });
        ctx.putImageData(img, 0, 0);
      }
    };
  }

  function normals(xyz, faces, n) {
    var N = new Float32Array(3 * n);
    for (var t = 0; t < faces.length; t += 3) {
      var a = 3 * faces[t], b = 3 * faces[t + 1], c = 3 * faces[t + 2];
      var ux = xyz[b] - xyz[a], uy = xyz[b + 1] - xyz[a + 1], uz = xyz[b + 2] - xyz[a + 2];
      var vx = xyz[c] - xyz[a], vy = xyz[c + 1] - xyz[a + 1], vz = xyz[c + 2] - xyz[a + 2];
      var nx = uy * vz - uz * vy, ny = uz * vx - ux * vz, nz = ux * vy - uy * vx;
      [a, b, c].forEach(function (o) { N[o] += nx; N[o + 1] += ny; N[o + 2] += nz; });
    }
    for (var i = 0; i < n; i++) {
      var len = Math.hypot(N[3 * i], N[3 * i + 1], N[3 * i + 2]) || 1;
      N[3 * i] /= len; N[3 * i + 1] /= len; N[3 * i + 2] /= len;
    }
    return N;
  }

  function Surface(root, d, raw) {
    var lo = d.lo, step = d.step, centre = d.centre;
    var hemis = d.hemis.map(function (h, i) {
      var q = ints(new Uint8Array(raw.coords[i]), 2, 3, false), n = q.length / 3, xyz = new Float32Array(3 * n);
      for (var v = 0; v < 3 * n; v++) xyz[v] = lo[v % 3] + q[v] * step[v % 3] - centre[v % 3];
      var big = h.n > 65535, f = ints(new Uint8Array(raw.faces[i]), big ? 4 : 2, 3, false);
      var faces = big ? new Uint32Array(f) : new Uint16Array(f);
      return {
        n: n, name: h.name, shift: h.shift, xyz: xyz, faces: faces, normals: normals(xyz, faces, n),
        gray: new Uint8Array(raw.gray[i]), rgb: new Uint8Array(3 * n), q: null,
        anat: raw.anat ? ints(new Uint8Array(raw.anat[i]), h.anat_bytes, 3, true) : null
      };
    });
    var canvas = el(root, "nsv-canvas"), status = el(root, "nsv-status");
    var view = { yaw: 0, pitch: 0, zoom: 1 }, shown = [true, true], comp = 0;
    var painter = root.dataset.renderer === "2d" ? null : GL(canvas, hemis);
    if (!painter) {
      var fresh = canvas.cloneNode(false);  // a canvas that had a WebGL attempt cannot give a 2-D context
      canvas.parentNode.replaceChild(fresh, canvas);
      canvas = fresh;
      painter = Flat(canvas, hemis);
    }
    root.dataset.renderer = painter.kind;
    function setComp(k) {
      comp = k;
      hemis.forEach(function (h, i) {
        var q = h.q = new Int8Array(raw.comps[k][i]);
        for (var v = 0; v < h.n; v++) {
          var c = q[v] === 0 ? [h.gray[v], h.gray[v], h.gray[v]] : rgb(d.lut, q[v]);
          h.rgb[3 * v] = c[0]; h.rgb[3 * v + 1] = c[1]; h.rgb[3 * v + 2] = c[2];
        }
      });
      painter.colours();
    }
    function draw() {
      var W = canvas.width, H = canvas.height, s = view.zoom / (d.radius * 1.05);
      var m = Math.min(W, H);
      painter.draw(rotation(view.yaw, view.pitch), s * m / W, s * m / H, 1 / (d.radius * 1.5), shown);
      status.textContent = d.comps[comp].label + ": loadings scaled to \u00b1" + fmt(d.comps[comp].scale) +
        " | view yaw " + Math.round(view.yaw) + "\u00b0, pitch " + Math.round(view.pitch) + "\u00b0" +
        " | " + (picked || "drag to rotate, wheel to zoom, click a point to read it");
      root.dataset.view = [Math.round(view.yaw), Math.round(view.pitch), view.zoom.toFixed(2)].join(",");
    }
    var picked = "";
    function pick(e) {
      // the vertex nearest the viewer among those drawn within 5 pixels of the click
      var r = canvas.getBoundingClientRect(), W = canvas.width, H = canvas.height;
      var px = (e.clientX - r.left) * W / r.width, py = (e.clientY - r.top) * H / r.height;
      var R = rotation(view.yaw, view.pitch), m = Math.min(W, H), s = view.zoom / (d.radius * 1.05) * m / 2;
      var best = null;
      hemis.forEach(function (h, hi) {
        if (!shown[hi]) return;
        for (var v = 0; v < h.n; v++) {
          var a = h.xyz[3 * v], b = h.xyz[3 * v + 1], c = h.xyz[3 * v + 2];
          var x = (R[0] * a + R[1] * b + R[2] * c) * s + W / 2, y = H / 2 - (R[3] * a + R[4] * b + R[5] * c) * s;
          var z = R[6] * a + R[7] * b + R[8] * c;
          if ((x - px) * (x - px) + (y - py) * (y - py) <= 25 && (!best || z > best[2])) best = [hi, v, z];
        }
      });
      if (!best) { picked = ""; draw(); return; }
      var h = hemis[best[0]], v = best[1], xyz;
      if (h.anat) xyz = [h.anat[3 * v] / 10, h.anat[3 * v + 1] / 10, h.anat[3 * v + 2] / 10];
      else xyz = [0, 1, 2].map(function (j) { return h.xyz[3 * v + j] + centre[j] - h.shift[j]; });
      var q = h.q[v];
      picked = h.name + " vertex " + v + " at (" + xyz.map(function (c) { return c.toFixed(1); }).join(", ") +
        ") mm, loading " + (q === 0 ? "0 (not in the support)" : fmt(q * d.comps[comp].scale / 127));
      root.dataset.picked = best[0] + "," + v;
      draw();
    }
    var last = null, start = null;
    canvas.addEventListener("mousedown", function (e) { last = start = [e.clientX, e.clientY]; });
    window.addEventListener("mouseup", function (e) {
      if (start && Math.abs(e.clientX - start[0]) + Math.abs(e.clientY - start[1]) < 3) pick(e);
      last = start = null;
    });
    window.addEventListener("mousemove", function (e) {
      if (!last) return;
      view.yaw += (e.clientX - last[0]) * 0.5;
      view.pitch = Math.max(-180, Math.min(180, view.pitch + (e.clientY - last[1]) * 0.5));
      last = [e.clientX, e.clientY];
      draw();
    });
    canvas.addEventListener("wheel", function (e) {
      e.preventDefault();
      view.zoom = Math.max(0.3, Math.min(8, view.zoom * (e.deltaY > 0 ? 0.9 : 1.1)));
      draw();
    }, { passive: false });
    el(root, "nsv-select").addEventListener("change", function (e) { setComp(+e.target.value); draw(); });
    root.querySelectorAll("[data-view]").forEach(function (b) {
      b.addEventListener("click", function () {
        var v = b.dataset.view.split(",");
        view.yaw = +v[0]; view.pitch = +v[1];
        draw();
      });
    });
    root.querySelectorAll("[data-hemi]").forEach(function (b) {
      b.addEventListener("change", function () { shown[+b.dataset.hemi] = b.checked; draw(); });
    });
    setComp(0);
    draw();
  }

  /* ---------------- start: decode the embedded data, then build the viewer ---------------- */

  function decode(d) {
    var jobs = {};
    function add(key, list) { jobs[key] = Promise.all(list.map(inflate)); }
    if (d.kind === "volume") {
      add("bg", [d.bg]); add("mask", [d.mask]);
      add("comps", d.comps.map(function (c) { return c.data; }));
    } else {
      add("coords", d.hemis.map(function (h) { return h.coords; }));
      add("faces", d.hemis.map(function (h) { return h.faces; }));
      add("gray", d.hemis.map(function (h) { return h.gray; }));
      if (d.hemis[0].anat) add("anat", d.hemis.map(function (h) { return h.anat; }));
      add("flat", [].concat.apply([], d.comps.map(function (c) { return c.data; })));
    }
    var keys = Object.keys(jobs);
    return Promise.all(keys.map(function (k) { return jobs[k]; })).then(function (vals) {
      var raw = {};
      keys.forEach(function (k, i) { raw[k] = vals[i]; });
      if (d.kind === "volume") { raw.bg = raw.bg[0]; raw.mask = raw.mask[0]; }
      else {
        var nh = d.hemis.length;
        raw.comps = d.comps.map(function (c, k) { return raw.flat.slice(k * nh, (k + 1) * nh); });
      }
      return raw;
    });
  }

  document.querySelectorAll(".nsv").forEach(function (root) {
    var d = JSON.parse(el(root, "nsv-data").textContent);
    decode(d).then(function (raw) {
      (d.kind === "volume" ? Volume : Surface)(root, d, raw);
      root.dataset.ready = "1";
    }).catch(function (err) {
      el(root, "nsv-status").textContent = "The viewer could not start: " + err;
      root.dataset.ready = "error";
    });
  });
})();
