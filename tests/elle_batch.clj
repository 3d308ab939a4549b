;; Jepsen Elle's list-append checker over many (history, model) pairs in one JVM, for
;; the cross-checks in test_elle_checker.py: starting the reference's own command line
;; once per pair costs seconds each. Reads lines `HISTORY.edn MODEL` on stdin and prints
;; one line per pair: `HISTORY MODEL VALID ANOMALY-TYPES` (EDN values, space separated).
;; Run with the jars of /work/shared/elle on the class path (see that folder's elle-check).
(ns elle-batch.main
  (:require [clojure.edn :as edn]
            [clojure.java.io :as io]
            [clojure.string :as str]))

(defn read-ops [file]
  (with-open [r (java.io.PushbackReader. (io/reader file))]
    (let [eof (Object.)
          opts {:eof eof :default (fn [_tag value] value)}
          forms (loop [forms (transient [])]
                  (let [f (edn/read opts r)]
                    (if (identical? f eof) (persistent! forms) (recur (conj! forms f)))))]
      (if (and (= 1 (count forms)) (sequential? (first forms))) (vec (first forms)) forms))))

(require '[elle.list-append :as la] '[jepsen.history :as h])

(let [root (org.slf4j.LoggerFactory/getLogger org.slf4j.Logger/ROOT_LOGGER_NAME)]
  (.setLevel root ch.qos.logback.classic.Level/ERROR))

(doseq [line (line-seq (java.io.BufferedReader. *in*))
        :when (not (str/blank? line))]
  (let [[file model] (str/split (str/trim line) #"\s+")
        result (try (la/check {:consistency-models [(keyword model)]} (h/history (read-ops file)))
                    (catch Throwable e {:valid? :error :anomaly-types [(str (.getMessage e))]}))]
    (println file model (pr-str (:valid? result)) (pr-str (vec (sort (map name (:anomaly-types result))))))
    (flush)))
(System/exit 0)
