"""Tests for Configuration: reading TF_CONFIG, roles, strategies, servers."""

import ast
import json
import re
import socket

import pytest
import tensorflow as tf

from tensorfx import ConfigurationError
from tensorfx.training import Configuration
from tensorfx.training import TaskSpec
from tensorfx.training._cluster import config as _config


def from_tf_config(value, var='TF_CONFIG', **extra):
  """Reads a Configuration from a TF_CONFIG given as a dict or raw text."""
  text = value if isinstance(value, str) else json.dumps(value)
  return Configuration.environment({var: text, **extra})


PS_CLUSTER = {
  'chief': ['c:2222'],
  'worker': ['w0:2222', 'w1:2222'],
  'ps': ['p0:2222', 'p1:2222'],
  'evaluator': ['e:2222'],
}


# Reading the environment.


@pytest.mark.parametrize(
  'environ',
  [
    {},
    {'TF_CONFIG': ''},
    {'TF_CONFIG': '  '},
    {'TF_CONFIG': '{}'},
    {'TF_CONFIG': '{"task": {}}'},
    {'TF_CONFIG': '{"task": null, "cluster": {}}'},
    {'TF_CONFIG': '', 'CLUSTER_SPEC': ''},
  ],
)
def test_missing_or_empty_tf_config_is_a_local_chief(environ):
  config = Configuration.environment(environ)
  assert config == Configuration.local()
  assert config.task == TaskSpec('chief', 0)
  assert config.cluster is None and config.training_cluster is None
  assert config.job is None and config.env == 'local'
  assert config.master and not config.distributed and config.device == ''


def test_environment_defaults_to_os_environ(monkeypatch):
  monkeypatch.setenv(
    'TF_CONFIG',
    json.dumps(
      {
        'cluster': {'chief': ['c:1'], 'worker': ['w:1']},
        'task': {'type': 'worker', 'index': 0},
      }
    ),
  )
  assert Configuration.environment().worker
  monkeypatch.delenv('TF_CONFIG')
  monkeypatch.delenv('CLUSTER_SPEC', raising=False)
  assert Configuration.environment() == Configuration.local()


def test_legacy_ai_platform_form_is_normalised():
  job = {'args': ['--max-steps', '100'], 'region': 'us-central1'}
  config = from_tf_config(
    {
      'cluster': {
        'master': ['m:2222'],
        'worker': ['w0:2222', 'w1:2222'],
        'ps': ['p:2222'],
      },
      'task': {'type': 'master', 'index': 0, 'trial': '3', 'cloud': 'c1a2b3'},
      'job': job,
      'environment': 'cloud',
    }
  )
  assert config.task == TaskSpec('chief', 0, '3')
  assert config.cluster.as_dict() == {
    'chief': ['m:2222'],
    'worker': ['w0:2222', 'w1:2222'],
    'ps': ['p:2222'],
  }
  assert config.master and config.trial == '3'
  assert config.job == job and config.env == 'cloud'
  assert config.device == '/job:chief/task:0'
  assert config.strategy_kind == 'parameter_server'


def test_legacy_single_master_is_not_distributed():
  config = from_tf_config(
    {
      'cluster': {'master': ['m:2222']},
      'task': {'type': 'master', 'index': 0},
      'environment': 'cloud',
    }
  )
  assert config.master and not config.distributed and config.device == ''
  assert config.cluster.as_dict() == {'chief': ['m:2222']}


def test_vertex_chief_form_with_evaluator():
  config = from_tf_config(
    {
      'cluster': PS_CLUSTER,
      'task': {'type': 'evaluator', 'index': 0, 'trial': 7},
      'environment': 'cloud',
    }
  )
  assert config.evaluator and not config.master
  assert config.trial == '7'
  assert config.cluster.as_dict() == PS_CLUSTER
  training = dict(PS_CLUSTER)
  del training['evaluator']
  assert config.training_cluster.as_dict() == training
  assert config.num_workers == 2 and config.num_ps == 2
  assert config.device == '/job:evaluator/task:0'
  assert config.strategy_kind == 'default'


@pytest.mark.parametrize('var', ['TF_CONFIG', 'CLUSTER_SPEC'])
def test_vertex_workerpool_form(var):
  config = from_tf_config(
    {
      'cluster': {
        'workerpool0': ['c:2222'],
        'workerpool1': ['w0:2222', 'w1:2222'],
        'workerpool2': ['p:2222'],
        'workerpool3': ['e:2222'],
      },
      'task': {'type': 'workerpool1', 'index': 1, 'trial': '2'},
      'job': {'workerPoolSpecs': []},
      'environment': 'cloud',
    },
    var=var,
  )
  assert config.task == TaskSpec('worker', 1, '2')
  assert config.cluster.as_dict() == {
    'chief': ['c:2222'],
    'worker': ['w0:2222', 'w1:2222'],
    'ps': ['p:2222'],
    'evaluator': ['e:2222'],
  }
  assert config.device == '/job:worker/task:1'
  assert config.job == {'workerPoolSpecs': []}


def test_tf_config_wins_over_cluster_spec():
  config = Configuration.environment(
    {
      'TF_CONFIG': json.dumps(
        {'cluster': {'chief': ['c:1'], 'ps': ['p:1']}, 'task': {'type': 'ps'}}
      ),
      'CLUSTER_SPEC': 'not json',
    }
  )
  assert config.param_server


def test_cluster_spec_used_when_tf_config_empty():
  config = Configuration.environment(
    {
      'TF_CONFIG': '',
      'CLUSTER_SPEC': json.dumps(
        {
          'cluster': {'workerpool0': ['c:1']},
          'task': {'type': 'workerpool0', 'index': 0},
          'environment': 'cloud',
        }
      ),
    }
  )
  assert config.master and config.env == 'cloud'


def test_trial_falls_back_to_cloud_ml_trial_id():
  config = from_tf_config(
    {'cluster': {'chief': ['c:1']}, 'task': {'type': 'chief'}},
    CLOUD_ML_TRIAL_ID='12',
  )
  assert config.trial == '12'


def test_job_given_as_json_string_is_decoded():
  config = from_tf_config({'task': {'type': 'chief'}, 'job': '{"a": 1}'})
  assert config.job == {'a': 1}


def test_task_without_cluster_is_a_lone_chief():
  config = from_tf_config(
    {
      'task': {'type': 'master', 'index': 0, 'trial': '4'},
      'environment': 'cloud',
    }
  )
  assert config.task == TaskSpec('chief', 0, '4') and config.cluster is None
  assert config.env == 'cloud'


def test_evaluator_may_be_absent_from_cluster():
  config = from_tf_config(
    {
      'cluster': {'chief': ['c:1'], 'worker': ['w:1']},
      'task': {'type': 'evaluator', 'index': 0},
    }
  )
  assert config.evaluator and config.strategy_kind == 'default'
  assert 'evaluator' not in config.cluster.as_dict()


# Malformed TF_CONFIG: every message names the variable and the key.


def test_not_json_names_position():
  with pytest.raises(
    ConfigurationError,
    match=r'TF_CONFIG .*not valid JSON.*line 1 column 2 '
    r'\(char 1\).*Received: TF_CONFIG=\{bad',
  ):
    from_tf_config('{bad')


def test_not_json_in_cluster_spec_names_cluster_spec():
  with pytest.raises(ConfigurationError, match=r'^CLUSTER_SPEC .*JSON'):
    Configuration.environment({'CLUSTER_SPEC': 'nope'})


@pytest.mark.parametrize('text', ['[1, 2]', '"chief"', '3', 'null'])
def test_top_level_not_an_object(text):
  with pytest.raises(
    ConfigurationError,
    match=r'TF_CONFIG must hold a JSON object.*Received: '
    r'TF_CONFIG=',
  ):
    from_tf_config(text)


# (TF_CONFIG, the key the message names, what it says)
MALFORMED = [
  (
    {'cluster': ['c:1'], 'task': {'type': 'chief'}},
    'cluster',
    'must be an object',
  ),
  (
    {'cluster': {'chief': ['c:1'], 'worker': 'w:1'}, 'task': {'type': 'chief'}},
    'cluster.worker',
    'non-empty list',
  ),
  (
    {'cluster': {'chief': ['c:1'], 'worker': []}, 'task': {'type': 'chief'}},
    'cluster.worker',
    'non-empty list',
  ),
  (
    {
      'cluster': {'chief': ['c:1'], 'worker': ['w:1', 'w2']},
      'task': {'type': 'chief'},
    },
    'cluster.worker[1]',
    "'host:port'",
  ),
  (
    {
      'cluster': {'chief': ['c:1'], 'worker': ['w:1', 7]},
      'task': {'type': 'chief'},
    },
    'cluster.worker[1]',
    "'host:port'",
  ),
  (
    {'cluster': {'chief': ['c:99999']}, 'task': {'type': 'chief'}},
    'cluster.chief[0]',
    "'host:port'",
  ),
  (
    {
      'cluster': {'chief': ['c:1'], 'workers': ['w:1']},
      'task': {'type': 'chief'},
    },
    'cluster.workers',
    'not a job name; expected one of chief, master, '
    'worker, ps, evaluator, workerpool0',
  ),
  (
    {
      'cluster': {'chief': ['c:1'], 'master': ['m:1']},
      'task': {'type': 'chief'},
    },
    'cluster.master',
    'same job',
  ),
  (
    {'cluster': {'chief': ['c:1', 'd:1']}, 'task': {'type': 'chief'}},
    'cluster.chief',
    'exactly one address',
  ),
  (
    {'cluster': {'chief': ['c:1']}, 'task': ['chief', 0]},
    'task',
    'must be an object',
  ),
  ({'cluster': {'chief': ['c:1']}}, 'task', 'must be an object'),
  (
    {'cluster': {'chief': ['c:1']}, 'task': {'index': 0}},
    'task.type',
    'must be one of',
  ),
  (
    {'cluster': {'chief': ['c:1']}, 'task': {'type': 'boss'}},
    'task.type',
    'must be one of chief, master',
  ),
  (
    {'cluster': {'chief': ['c:1']}, 'task': {'type': 3}},
    'task.type',
    'must be one of',
  ),
  (
    {'cluster': {'chief': ['c:1'], 'ps': ['p:1']}, 'task': {'type': 'worker'}},
    'task.type',
    r'must name a job of `cluster` \(chief, ps\)',
  ),
  ({'task': {'type': 'ps'}}, 'task.type', 'when there is no `cluster`'),
  (
    {'cluster': {'chief': ['c:1']}, 'task': {'type': 'chief', 'index': -1}},
    'task.index',
    'non-negative integer',
  ),
  (
    {'cluster': {'chief': ['c:1']}, 'task': {'type': 'chief', 'index': '0'}},
    'task.index',
    'non-negative integer',
  ),
  (
    {'cluster': {'chief': ['c:1']}, 'task': {'type': 'chief', 'index': 0.0}},
    'task.index',
    'non-negative integer',
  ),
  (
    {
      'cluster': {'chief': ['c:1'], 'worker': ['w:1', 'w:2']},
      'task': {'type': 'worker', 'index': 2},
    },
    'task.index',
    r'below 2, the number of tasks in job `cluster.worker`',
  ),
  (
    {
      'cluster': {'workerpool0': ['c:1'], 'workerpool1': ['w:1']},
      'task': {'type': 'workerpool1', 'index': 1},
    },
    'task.index',
    r'below 1, the number of tasks in job `cluster\.workerpool1`',
  ),
  (
    {'cluster': {'chief': ['c:1']}, 'task': {'type': 'chief', 'trial': [1]}},
    'task.trial',
    'string or an integer',
  ),
  (
    {'cluster': {'chief': ['h:1'], 'ps': ['h:1']}, 'task': {'type': 'ps'}},
    'cluster.ps[0]',
    r'must differ from `cluster.chief\[0\]`',
  ),
  (
    {'cluster': {'worker': ['w:1'], 'ps': ['p:1']}, 'task': {'type': 'worker'}},
    'cluster',
    r'must have a chief \(or master, workerpool0\) job',
  ),
  (
    {
      'cluster': {'chief': ['c:1']},
      'task': {'type': 'chief'},
      'environment': 1,
    },
    'environment',
    'must be a string',
  ),
  ({'task': {'type': 'chief'}, 'job': [1, 2]}, 'job', 'must be an object'),
]


@pytest.mark.parametrize(
  'tf_config, key, expected',
  MALFORMED,
  ids=[f'{m[1]}-{i}' for i, m in enumerate(MALFORMED)],
)
def test_malformed_tf_config_names_the_key(tf_config, key, expected):
  key = re.escape(key)
  with pytest.raises(
    ConfigurationError,
    match=rf'^TF_CONFIG key `{key}` .*{expected}.*\. '
    rf'Received: {key}=',
  ):
    from_tf_config(tf_config)


def test_received_value_is_shown_as_json():
  with pytest.raises(ConfigurationError, match=r'Received: task.type="boss"$'):
    from_tf_config({'cluster': {'chief': ['c:1']}, 'task': {'type': 'boss'}})


def test_configuration_error_is_a_value_error():
  with pytest.raises(ValueError):
    from_tf_config('{')


# The constructor validates too.


def test_constructor_validates_task_against_cluster():
  with pytest.raises(
    ConfigurationError,
    match=r'^Configuration argument `task.index` must be '
    r'below 1',
  ):
    Configuration(TaskSpec('worker', 1), {'chief': ['c:1'], 'worker': ['w:1']})
  with pytest.raises(ConfigurationError, match=r'`task` must be a TaskSpec'):
    Configuration('chief', None)
  with pytest.raises(ConfigurationError, match=r'`env` must be a string'):
    Configuration(TaskSpec('chief'), None, None, None)


def test_constructor_normalises_legacy_names_and_accepts_cluster_spec():
  spec = tf.train.ClusterSpec({'master': ['m:1'], 'worker': ['w:1']})
  config = Configuration(TaskSpec('master', 0, 5), spec, {'a': 1}, 'cloud')
  assert config.task == TaskSpec('chief', 0, '5')
  assert config.cluster.as_dict() == {'chief': ['m:1'], 'worker': ['w:1']}


# Roles and properties.


@pytest.mark.parametrize(
  'task, flags',
  [
    (TaskSpec('chief'), (True, False, False, False)),
    (TaskSpec('worker', 1), (False, False, True, False)),
    (TaskSpec('ps', 1), (False, True, False, False)),
    (TaskSpec('evaluator'), (False, False, False, True)),
  ],
)
def test_role_properties(task, flags):
  config = Configuration(task, PS_CLUSTER)
  assert (
    config.master,
    config.param_server,
    config.worker,
    config.evaluator,
  ) == flags
  assert config.distributed
  assert config.device == f'/job:{task.type}/task:{task.index}'
  assert config.num_workers == 2 and config.num_ps == 2


def test_to_dict_and_repr():
  config = Configuration(
    TaskSpec('worker', 0, '1'),
    {'chief': ['c:1'], 'worker': ['w:1']},
    {'args': []},
    'cloud',
  )
  record = config.to_dict()
  assert record == {
    'task': {'type': 'worker', 'index': 0, 'trial': '1'},
    'cluster': {'chief': ['c:1'], 'worker': ['w:1']},
    'job': {'args': []},
    'env': 'cloud',
  }
  assert json.loads(json.dumps(record)) == record
  assert repr(config) == (
    "Configuration(task=TaskSpec(type='worker', index=0, trial='1'), "
    "cluster={'chief': ['c:1'], 'worker': ['w:1']}, job={'args': []}, "
    "env='cloud')"
  )
  assert Configuration.local().to_dict()['cluster'] is None


def test_module_does_not_import_tensorflow_at_top_level():
  # The package may import TF already, so check the source, not sys.modules.
  with open(_config.__file__, encoding='utf-8') as f:
    tree = ast.parse(f.read())
  for node in tree.body:
    if isinstance(node, ast.Import):
      assert not any(a.name.startswith('tensorflow') for a in node.names)
    if isinstance(node, ast.ImportFrom):
      assert not (node.module or '').startswith('tensorflow')


# Strategies by cluster shape.


@pytest.mark.parametrize(
  'cluster, task, kind',
  [
    (None, TaskSpec('chief'), 'default'),
    ({'chief': ['c:1']}, TaskSpec('chief'), 'default'),
    (PS_CLUSTER, TaskSpec('chief'), 'parameter_server'),
    (PS_CLUSTER, TaskSpec('worker', 1), 'parameter_server'),
    (PS_CLUSTER, TaskSpec('ps', 0), 'parameter_server'),
    (PS_CLUSTER, TaskSpec('evaluator'), 'default'),
    ({'chief': ['c:1'], 'ps': ['p:1']}, TaskSpec('chief'), 'parameter_server'),
    (
      {'chief': ['c:1'], 'worker': ['w:1']},
      TaskSpec('chief'),
      'multi_worker_mirrored',
    ),
    (
      {'chief': ['c:1'], 'worker': ['w:1']},
      TaskSpec('worker'),
      'multi_worker_mirrored',
    ),
    ({'chief': ['c:1'], 'evaluator': ['e:1']}, TaskSpec('chief'), 'default'),
    (
      {'chief': ['c:1'], 'evaluator': ['e:1']},
      TaskSpec('evaluator'),
      'default',
    ),
  ],
)
def test_strategy_kind_by_cluster_shape(cluster, task, kind):
  assert Configuration(task, cluster).strategy_kind == kind


def test_chief_with_only_an_evaluator_is_not_distributed():
  config = Configuration(
    TaskSpec('chief'), {'chief': ['c:1'], 'evaluator': ['e:1']}
  )
  assert not config.distributed and config.device == ''
  assert config.training_cluster.as_dict() == {'chief': ['c:1']}


@pytest.mark.parametrize(
  'gpus, kind', [(0, 'default'), (1, 'default'), (2, 'mirrored')]
)
def test_strategy_kind_with_local_gpus(monkeypatch, gpus, kind):
  monkeypatch.setattr(
    tf.config, 'list_physical_devices', lambda device_type=None: ['gpu'] * gpus
  )
  assert Configuration.local().strategy_kind == kind
  # Distributed tasks use the cluster's strategy whatever the local GPUs.
  config = Configuration(
    TaskSpec('chief'), {'chief': ['c:1'], 'worker': ['w:1']}
  )
  assert config.strategy_kind == 'multi_worker_mirrored'


def test_local_device_setter_is_the_default_strategy():
  strategy = Configuration.local().create_device_setter()
  assert strategy is tf.distribute.get_strategy()
  with strategy.scope():
    variable = tf.Variable(1.0)
  assert float(variable.numpy()) == 1.0


def test_evaluator_device_setter_is_the_default_strategy():
  config = Configuration(TaskSpec('evaluator'), PS_CLUSTER)
  assert config.create_device_setter() is tf.distribute.get_strategy()


# Servers.


def free_ports(count):
  sockets = []
  for _ in range(count):
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    sockets.append(s)
  ports = [s.getsockname()[1] for s in sockets]
  for s in sockets:
    s.close()
  return ports


def test_create_server_on_free_ports():
  chief, ps = free_ports(2)
  config = Configuration(
    TaskSpec('ps', 0),
    {'chief': [f'127.0.0.1:{chief}'], 'ps': [f'127.0.0.1:{ps}']},
  )
  server = config.create_server()
  assert server.target == f'grpc://127.0.0.1:{ps}'
  assert server.server_def.job_name == 'ps'
  assert server.server_def.task_index == 0
  assert {j.name for j in server.server_def.cluster.job} == {'chief', 'ps'}


def test_create_server_excludes_the_evaluator():
  config = Configuration(
    TaskSpec('worker'),
    {
      'chief': ['127.0.0.1:1'],
      'worker': ['127.0.0.1:2'],
      'evaluator': ['127.0.0.1:3'],
    },
  )
  server = config.create_server(start=False)
  assert {j.name for j in server.server_def.cluster.job} == {'chief', 'worker'}


@pytest.mark.parametrize(
  'config',
  [
    Configuration.local(),
    Configuration(TaskSpec('chief'), {'chief': ['c:1']}),
    Configuration(TaskSpec('evaluator'), {'chief': ['c:1'], 'ps': ['p:1']}),
  ],
  ids=['local', 'lone-chief', 'evaluator'],
)
def test_create_server_needs_a_distributed_task(config):
  with pytest.raises(ConfigurationError, match='create_server needs'):
    config.create_server()
